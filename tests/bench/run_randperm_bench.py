#!/usr/bin/python3
"""The epoch permutation alone, side by side in one run: shard's prefetching
torch.randperm port, the one-swap-at-a-time port it replaced, a memcpy of the
same bytes (the memory limit), and python3-torch's own torch.randperm with a
seeded generator (whose output must have the same checksum). Each figure is
the median of --repeats runs. Prints a Markdown table with ratios; exit
status 1 when an order is not bit-exact.

  tests/bench/run_randperm_bench.py --bin-dir build/bin
      [--sizes 1e7,1e8] [--repeats 3] [--seed 0]
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np
import torch


def torch_randperm(n, seed, repeats):
    seconds = []
    for _ in range(repeats):
        g = torch.Generator()
        g.manual_seed(seed)
        began = time.monotonic()
        perm = torch.randperm(n, generator=g)
        seconds.append(time.monotonic() - began)
    p = perm.numpy().astype(np.uint64)
    checksum = int((np.arange(1, n + 1, dtype=np.uint64) * p).sum(
        dtype=np.uint64))
    return statistics.median(seconds), checksum


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--sizes", default="1e7,1e8")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    out = subprocess.run(
        [f"{args.bin_dir}/shard-randperm-bench", "--sizes",
         ",".join(map(str, sizes)), "--repeats", str(args.repeats),
         "--seed", str(args.seed), "--variant", "legacy"],
        check=True, capture_output=True, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines()]
    print(f"torch {torch.__version__}, seed {args.seed}, median of "
          f"{args.repeats}\n")
    print("| N | shard (prefetching) | previous port | torch.randperm | "
          "memcpy of 4N bytes | vs previous | vs torch | vs memcpy | "
          "bit-exact |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    all_exact = True
    for row in rows:
        torch_s, torch_sum = torch_randperm(row["n"], args.seed, args.repeats)
        exact = row["equal"] and row["checksum"] == torch_sum
        all_exact = all_exact and exact
        print(f"| {row['n']:.0e} | {row['prefetching_s']:.3f} s | "
              f"{row['reference_s']:.3f} s | {torch_s:.3f} s | "
              f"{row['memcpy_s']:.4f} s | "
              f"{ratio(row['reference_s'], row['prefetching_s'], 1)}x faster "
              f"| {ratio(torch_s, row['prefetching_s'], 1)}x faster | "
              f"{ratio(row['prefetching_s'], row['memcpy_s'], 0)}x slower | "
              f"{'yes' if exact else 'NO'} |")
    return 0 if all_exact else 1


def ratio(numerator, denominator, digits):
    """numerator / denominator, or "n/a" when the denominator measured 0
    (below the timer's resolution at tiny sizes)."""
    if denominator <= 0:
        return "n/a"
    return f"{numerator / denominator:.{digits}f}"


if __name__ == "__main__":
    sys.exit(main())
