#!/usr/bin/python3
"""A plain accelerate training loop on the coordinator's balanced batches,
as docs/user-guide.md "Hugging Face Trainer" shows it (run by
accelerate_loop_test.py under torchrun --rdzv-backend shard): the model and
optimizer go through accelerator.prepare; with --prepare-loader the loader
too (every accelerate tutorial's habit: a shard.torch.DataLoader comes back
as it is, already sharded by the coordinator). Writes "epoch index" per
trained sample to --record, commits at the end of each epoch and prints
"rank R of W: params CHECKSUM".
"""
import argparse
import time

import torch
from accelerate import Accelerator, PartialState

import shard.torch


class Sequences(torch.utils.data.Dataset):
    def __init__(self, lengths):
        self.lengths = lengths

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, index):
        return index, torch.ones(self.lengths[index])


def pad(samples):
    longest = max(len(values) for _, values in samples)
    batch = torch.zeros(len(samples), longest)
    for row, (_, values) in enumerate(samples):
        batch[row, :len(values)] = values
    return [index for index, _ in samples], batch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--coordinator", required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--record", required=True)
    # Tests: the main process waits this long before each commit, so that
    # the other rank reaches the end first.
    parser.add_argument("--commit-delay", type=float, default=0.0)
    parser.add_argument("--prepare-loader", action="store_true")
    args = parser.parse_args()
    # Gloo on CPU: accelerate would pick MPI on a torch built with it.
    PartialState(cpu=True, backend="gloo")
    accelerator = Accelerator(cpu=True)
    lengths = [1 + (i * 37) % 200 for i in range(997)]
    dataset = Sequences(lengths)
    batches = shard.torch.DistributedBatchSampler(
        dataset, costs=lengths, batch_tokens=600, coordinator=args.coordinator,
        job=args.job, seed=3)
    loader = shard.torch.DataLoader(dataset, batch_sampler=batches,
                                    collate_fn=pad, num_workers=2)
    torch.manual_seed(0)
    model = torch.nn.Linear(200, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-5)
    if args.prepare_loader:
        model, optimizer, loader = accelerator.prepare(model, optimizer,
                                                       loader)
    else:
        model, optimizer = accelerator.prepare(model, optimizer)
    record = open(args.record.format(rank=batches.rank), "a")
    for epoch in range(batches.epoch, args.epochs):
        loader.set_epoch(epoch)
        for indices, batch in loader:
            record.writelines(f"{epoch} {i}\n" for i in indices)
            record.flush()
            batch = torch.nn.functional.pad(batch, (0, 200 - batch.shape[1]))
            loss = model(batch.to(accelerator.device)).pow(2).mean()
            optimizer.zero_grad()
            accelerator.backward(loss)
            optimizer.step()
        if accelerator.is_main_process:
            time.sleep(args.commit_delay)
            batches.commit()
        # No rank leaves the job (batches.close(), or the process's end)
        # before the epoch's commit: a member leaving ends the generation,
        # and the commit would be refused (ABORTED).
        accelerator.wait_for_everyone()
    checksum = sum(float(p.detach().double().sum())
                   for p in model.parameters())
    print(f"rank {batches.rank} of {batches.num_replicas} (accelerate "
          f"{accelerator.num_processes}): params {checksum:.10f}",
          flush=True)
    batches.close()


if __name__ == "__main__":
    main()
