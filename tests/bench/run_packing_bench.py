#!/usr/bin/python3
"""How full and how even packed micro-batches are, in one run: for each
length set and (W, T), the epoch's steps, the fill (real tokens over
W x T x steps), the balance (real tokens over W x the sum over steps of the
largest rank's tokens) and the time balance (the same with each sample
costing L + L^2 / d, d = --attention-length, as attention's cost grows)
of three packers of sequences without padding (a micro-batch holds at most
T tokens; exit 1 if one of two or more samples holds more):

  shard        this project, --cost-model sum --batch-tokens T
               (shard-batch-plan: the coordinator's planning code,
               docs/balanced-batches.md);
  shard_time   the same with --attention-length d: T caps tokens, the
               steps are balanced by L + L^2 / d;
  lpt_steps    the Multipack sampler's published rule, re-created here: in
               the shuffled order, each step takes the longest run of next
               samples that longest-processing-time-first places on W
               ranks of T tokens each (a binary search on the run's
               length), and rank r trains what LPT put on it;
  ffd_bins     its first-fit-decreasing variant: each group of --group
               samples of the shuffled order is packed first-fit-
               decreasing into micro-batches of T, the micro-batches are
               shuffled and dealt W to a step (an incomplete last step is
               dropped, as the packers do: its samples are counted as
               left out).

Length sets (clamped to [1, T]): bimodal (half uniform 64..511, half
uniform 1,536..3,071 tokens), lognormal (mu 6, sigma 1) and heavy
(lognormal mu 5, sigma 1.6).

  tests/bench/run_packing_bench.py --bin-dir build/bin
      [--samples 200000] [--configs 8:4096,64:4096,64:16384]
      [--attention-length 2048] [--group 100000]
"""
import argparse
import heapq
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

SEED = 7


def length_sets(n, budget):
    rng = np.random.default_rng(SEED)
    half = n // 2
    bimodal = np.concatenate([rng.integers(64, 512, half),
                              rng.integers(1536, 3072, n - half)])
    rng.shuffle(bimodal)
    return {
        "bimodal": bimodal,
        "lognormal(6,1)": rng.lognormal(6.0, 1.0, n),
        "heavy lognormal(5,1.6)": rng.lognormal(5.0, 1.6, n),
    }, budget


def clamped(lengths, budget):
    return np.clip(np.rint(lengths), 1, budget).astype(np.int64)


def shard_steps(bin_dir, lengths, world, budget, attention_length=0):
    with tempfile.NamedTemporaryFile(suffix=".u32") as file:
        lengths.astype("<u4").tofile(file.name)
        out = subprocess.run(
            [os.path.join(bin_dir, "shard-batch-plan"), "--costs", file.name,
             "--world", str(world), "--batch-tokens", str(budget),
             "--cost-model", "sum", "--seed", str(SEED),
             "--attention-length", str(attention_length)],
            check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def lpt(samples, lengths, bins, budget):
    """Longest processing time first: `samples` (longest first) each to
    the least loaded of `bins`; None when one would pass `budget`."""
    loads = [(0, b) for b in range(bins)]
    placed = [[] for _ in range(bins)]
    for sample in samples:
        load, b = heapq.heappop(loads)
        load += int(lengths[sample])
        if load > budget:
            return None
        placed[b].append(sample)
        heapq.heappush(loads, (load, b))
    return placed


def lpt_steps(lengths, world, budget):
    order = np.random.default_rng(SEED).permutation(len(lengths))
    ends = np.cumsum(lengths[order])
    steps, start = [], 0
    while start < len(order):
        def placed(count):
            run = sorted(order[start:start + count],
                         key=lambda s: -lengths[s])
            return lpt(run, lengths, world, budget)
        # No run longer than W x T tokens fits.
        before = int(ends[start - 1]) if start else 0
        high = int(np.searchsorted(ends, before + world * budget,
                                   side="right")) - start
        low, high = 1, max(1, high)
        while low < high:  # the longest run that fits
            middle = (low + high + 1) // 2
            if placed(middle) is not None:
                low = middle
            else:
                high = middle - 1
        steps.append(placed(low))
        start += low
    return steps


def first_fit_decreasing(samples, lengths, budget):
    """Each sample, longest first, to the first bin with room for it (a
    segment tree of the bins' room finds it), or to a new bin."""
    bins, size = [], 1
    while size < len(samples):
        size *= 2
    room = [budget] * (2 * size)
    for sample in sorted(samples, key=lambda s: -lengths[s]):
        length = int(lengths[sample])
        node = 1
        while node < size:
            node = 2 * node if room[2 * node] >= length else 2 * node + 1
        b = node - size
        if b == len(bins):
            bins.append([])
        bins[b].append(sample)
        room[node] -= length
        while node > 1:
            node //= 2
            room[node] = max(room[2 * node], room[2 * node + 1])
    return bins


def ffd_bins_steps(lengths, world, budget, group):
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(lengths))
    bins = []
    for start in range(0, len(order), group):
        bins += first_fit_decreasing(order[start:start + group], lengths,
                                     budget)
    rng.shuffle(bins)
    return [bins[s:s + world] for s in range(0, len(bins) - world + 1,
                                             world)]


def figures(steps, lengths, world, budget, attention_length):
    tokens = lengths.astype(np.float64)
    time_cost = tokens + tokens * tokens / attention_length
    real = largest = real_time = largest_time = 0.0
    samples = 0
    for step in steps:
        loads = [float(tokens[list(b)].sum()) if b else 0.0 for b in step]
        times = [float(time_cost[list(b)].sum()) if b else 0.0 for b in step]
        real += sum(loads)
        largest += max(loads)
        real_time += sum(times)
        largest_time += max(times)
        samples += sum(len(b) for b in step)
    count = len(steps)
    return dict(steps=count, fill=real / (world * budget * count),
                balance=real / (world * largest),
                time_balance=real_time / (world * largest_time),
                left_out=len(lengths) - samples)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--samples", type=int, default=200000)
    parser.add_argument("--configs", default="8:4096,64:4096,64:16384")
    parser.add_argument("--attention-length", type=int, default=2048)
    parser.add_argument("--group", type=int, default=100000)
    args = parser.parse_args()
    print("| lengths | W | T | packer | steps | fill | balance | "
          "time balance | left out |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    broken = []
    for config in args.configs.split(","):
        world, budget = (int(v) for v in config.split(":"))
        raw_sets, _ = length_sets(args.samples, budget)
        for name, raw in raw_sets.items():
            lengths = clamped(raw, budget)
            packers = {
                "shard": lambda: shard_steps(args.bin_dir, lengths, world,
                                             budget),
                "shard_time": lambda: shard_steps(
                    args.bin_dir, lengths, world, budget,
                    args.attention_length),
                "lpt_steps": lambda: lpt_steps(lengths, world, budget),
                "ffd_bins": lambda: ffd_bins_steps(lengths, world, budget,
                                                   args.group),
            }
            for packer, steps in packers.items():
                planned = steps()
                over = [b for step in planned for b in step
                        if len(b) > 1 and lengths[list(b)].sum() > budget]
                if over:
                    broken.append(f"{name} W={world} T={budget} {packer}: "
                                  f"{len(over)} micro-batches over T")
                got = figures(planned, lengths, world, budget,
                              args.attention_length)
                print(f"| {name} | {world} | {budget} | {packer} | "
                      f"{got['steps']:,} | {100 * got['fill']:.1f} % | "
                      f"{100 * got['balance']:.2f} % | "
                      f"{100 * got['time_balance']:.2f} % | "
                      f"{got['left_out']:,} |", flush=True)
    for line in broken:
        print(line, file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
