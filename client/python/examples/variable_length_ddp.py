#!/usr/bin/python3
"""DistributedDataParallel on variable-length data with balanced batches
(docs/balanced-batches.md): every rank's step costs the same.

Start it with torchrun (the processes know only the coordinator):

    torchrun --nnodes 1 --nproc_per_node 2 --rdzv_backend shard \\
        --rdzv_endpoint 127.0.0.1:7070 --rdzv_id lm \\
        variable_length_ddp.py --coordinator 127.0.0.1:7070 --job lm

(torch 1.13: `python3 -m shard.torchrun` with the same arguments plus
--redirects 2 --tee 2, see docs/user-guide.md "torchrun").

Each process builds the same synthetic corpus (token sequences whose
lengths follow a lognormal distribution, mu 5, sigma 1, clamped to
[16, 1024]), hands the lengths to shard.torch.DistributedBatchSampler with a
token budget per micro-batch, forms its Gloo process group through the
coordinator and trains a small Transformer encoder on batches padded to
their longest sequence for --steps steps, committing every 20 steps.
Rank 0 prints one JSON line: steps, real tokens per second (all ranks),
step time p50 / p90 (ms) and the padding fraction.
"""
import argparse
import json
import time

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

import shard.torch

VOCAB = 1000


def lengths(samples, seed=0, sigma=1.0, high=1024):
    """Lognormal sequence lengths (mu 5), clamped to [16, high]."""
    rng = np.random.default_rng(seed)
    return np.clip(np.rint(rng.lognormal(5, sigma, samples)), 16,
                   high).astype(np.int64)


class Sequences(torch.utils.data.Dataset):
    """Sample i: a token sequence of lengths[i] tokens (deterministic)."""

    def __init__(self, sizes):
        self.sizes = sizes

    def __len__(self):
        return len(self.sizes)

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(int(index))
        return torch.randint(1, VOCAB, (int(self.sizes[index]),),
                             generator=generator)


def pad_to_longest(sequences):
    """(tokens [B, longest], padding mask [B, longest], real tokens)."""
    longest = max(len(s) for s in sequences)
    tokens = torch.zeros(len(sequences), longest, dtype=torch.long)
    for row, sequence in enumerate(sequences):
        tokens[row, :len(sequence)] = sequence
    return tokens, tokens == 0, sum(len(s) for s in sequences)


class Encoder(nn.Module):
    """A small Transformer encoder predicting each sequence's mean token."""

    def __init__(self, width=32, layers=1):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, width)
        layer = nn.TransformerEncoderLayer(width, nhead=2,
                                           dim_feedforward=2 * width,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=layers)
        self.head = nn.Linear(width, 1)

    def forward(self, tokens, padding):
        hidden = self.encoder(self.embed(tokens), src_key_padding_mask=padding)
        hidden = hidden.masked_fill(padding.unsqueeze(-1), 0)
        pooled = hidden.sum(1) / (~padding).sum(1, keepdim=True)
        return self.head(pooled).squeeze(-1)


def train(model, batches, steps, commit=None):
    """Trains on `batches` (padded) for `steps` steps; rank 0's figures."""
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    times, real, padded = [], 0, 0
    started = time.perf_counter()
    for step, (tokens, padding, real_tokens) in enumerate(batches):
        if step == steps:
            break
        began = time.perf_counter()
        target = tokens.float().sum(1) / (~padding).sum(1) / VOCAB
        loss = nn.functional.mse_loss(model(tokens, padding), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - began)
        counts = torch.tensor([real_tokens, tokens.numel()])
        dist.all_reduce(counts)
        real += int(counts[0])
        padded += int(counts[1])
        if commit is not None and (step + 1) % 20 == 0:
            commit()
    elapsed = time.perf_counter() - started
    return {"steps": len(times), "tokens_per_s": real / elapsed,
            "step_ms_p50": 1000 * float(np.percentile(times, 50)),
            "step_ms_p90": 1000 * float(np.percentile(times, 90)),
            "padding": 1 - real / padded}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--coordinator", required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--batch-tokens", type=int, default=2048)
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(1)
    sizes = lengths(args.samples)
    dataset = Sequences(sizes)
    batches = shard.torch.DistributedBatchSampler(
        dataset, costs=sizes, batch_tokens=args.batch_tokens,
        coordinator=args.coordinator, job=args.job)
    shard.torch.init_process_group(batches, backend="gloo")
    torch.manual_seed(0)
    model = DistributedDataParallel(Encoder())
    loader = shard.torch.DataLoader(dataset, batch_sampler=batches,
                                    collate_fn=pad_to_longest)
    figures = train(model, loader, args.steps, commit=batches.commit)
    if dist.get_rank() == 0:
        print(json.dumps(figures), flush=True)
    dist.destroy_process_group()
    batches.close()


if __name__ == "__main__":
    main()
