#!/usr/bin/python3
"""How evenly each sampler loads the ranks of a step, on variable-length
data, in one run: for every length distribution and world size, each
step's imbalance (the most expensive rank's micro-batch cost over the
ranks' mean, p50 and p99), the padding fraction (padded tokens that are not
real tokens, over the epoch) and the steps per epoch. A micro-batch costs
count x longest (padded batches).

  torch        torch.utils.data.DistributedSampler (python3-torch), then
               batches of --batch-size consecutive indices per rank;
  group_by_len Hugging Face's group_by_length rule: a random permutation cut
               into megabatches of 50 x --batch-size, each sorted by length
               (longest first), cut into batches of --batch-size that are
               dealt to the ranks round-robin (accelerate's batch sharding);
  token_budget a token-budget sampler with a strided split (fairseq's
               batch_by_size, NeMo's global batch list): all samples sorted
               by length, batches filled up to --batch-tokens, the batch
               list shuffled, batch i to rank i mod W (an incomplete last
               step dropped);
  shard_tokens this project, --batch-tokens (shard-batch-plan: the
               coordinator's planning code, docs/balanced-batches.md);
  shard_size   this project, --batch-size.

Distributions: lognormal (mu 5, sigma 1, clamped to [16, 1024], as the
Hugging Face benchmark) and a heavier tail (mu 5, sigma 1.6, clamped to
[16, 8192]). Prints one Markdown table; the percentiles follow the rule
shardctl plan --balance follows (the nearest rank, rounded up to 1/10,000
below 2, the largest from 2 on).

  tests/bench/run_balanced_batches_bench.py --bin-dir build/bin
      [--samples 200000] [--worlds 2,8,64] [--batch-size 32]
      [--batch-tokens 8192]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from torch.utils.data import DistributedSampler

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "conformance"))
import batch_plan_reference as reference  # noqa: E402

DISTRIBUTIONS = {
    "lognormal(5,1) [16,1024]": (1.0, 1024),
    "lognormal(5,1.6) [16,8192]": (1.6, 8192),
}
SEED = 17


def lengths(n, sigma, high):
    rng = np.random.default_rng(SEED)
    return np.clip(np.rint(rng.lognormal(5, sigma, n)), 16,
                   high).astype(np.int64)


def strided_steps(batches, world):
    """Batches in order dealt round-robin: step s holds batches sW..sW+W-1."""
    return [batches[s * world:(s + 1) * world]
            for s in range(len(batches) // world)]


def torch_steps(costs, world, batch_size):
    per_rank = []
    for rank in range(world):
        sampler = DistributedSampler(range(len(costs)), num_replicas=world,
                                     rank=rank, shuffle=True, seed=SEED)
        indices = list(sampler)
        per_rank.append([indices[i:i + batch_size]
                         for i in range(0, len(indices), batch_size)])
    return [list(step) for step in zip(*per_rank)]


def group_by_length_steps(costs, world, batch_size):
    generator = torch.Generator().manual_seed(SEED)
    order = torch.randperm(len(costs), generator=generator).numpy()
    mega = 50 * batch_size
    batches = []
    for start in range(0, len(order), mega):
        block = order[start:start + mega]
        block = block[np.argsort(-costs[block], kind="stable")]
        batches += [block[i:i + batch_size]
                    for i in range(0, len(block), batch_size)]
    return strided_steps(batches, world)


def token_budget_steps(costs, world, budget):
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(costs))
    order = order[np.argsort(-costs[order], kind="stable")]
    batches, start = [], 0
    while start < len(order):
        end = start + max(1, budget // int(costs[order[start]]))
        batches.append(order[start:end])
        start = end
    rng.shuffle(batches)
    return strided_steps(batches, world)


def shard_steps(bin_dir, costs, world, flag, value):
    with tempfile.NamedTemporaryFile(suffix=".u32") as file:
        costs.astype("<u4").tofile(file.name)
        out = subprocess.run(
            [os.path.join(bin_dir, "shard-batch-plan"), "--costs", file.name,
             "--world", str(world), flag, str(value), "--seed", str(SEED)],
            check=True, capture_output=True, text=True).stdout
    return [[np.array(b, dtype=np.int64) for b in json.loads(line)]
            for line in out.splitlines()]


def figures(costs, steps):
    """p50, p99, padding and steps by the one rule of
    docs/balanced-batches.md "The figures" (padded costs)."""
    values = costs.tolist()
    written = reference.balance_figures(
        values, [[list(map(int, b)) for b in step] for step in steps],
        "padded")
    return (written["p50"], written["p99"], written["padding"],
            written["steps"])


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--samples", type=int, default=200000)
    parser.add_argument("--worlds", default="2,8,64")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--batch-tokens", type=int, default=8192)
    args = parser.parse_args()
    print("| lengths | W | sampler | imbalance p50 | imbalance p99 | "
          "padding | steps |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, (sigma, high) in DISTRIBUTIONS.items():
        costs = lengths(args.samples, sigma, high)
        for world in (int(w) for w in args.worlds.split(",")):
            samplers = {
                "torch": lambda: torch_steps(costs, world, args.batch_size),
                "group_by_len": lambda: group_by_length_steps(
                    costs, world, args.batch_size),
                "token_budget": lambda: token_budget_steps(
                    costs, world, args.batch_tokens),
                "shard_tokens": lambda: shard_steps(
                    args.bin_dir, costs, world, "--batch-tokens",
                    args.batch_tokens),
                "shard_size": lambda: shard_steps(
                    args.bin_dir, costs, world, "--batch-size",
                    args.batch_size),
            }
            for sampler, steps in samplers.items():
                p50, p99, padding, count = figures(costs, steps())
                print(f"| {name} | {world} | {sampler} | {p50:.3f} | "
                      f"{p99:.3f} | {100 * padding:.1f} % | {count} |",
                      flush=True)


if __name__ == "__main__":
    main()
