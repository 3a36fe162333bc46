#!/usr/bin/python3
"""A mixture against a single source of the same size, in one run: rank 0
of W = 8 (shard-sampler-bench, the C++ client in its own process), time to
the first index of epoch 0 and to the end of its shard (drain), with the
keyed (Feistel) shuffle, whose orders hold no memory at any size.

  single   one source of N samples (the plain job);
  mixture  three sources of 0.6 N, 0.35 N and 0.05 N samples with weights
           0.5 / 0.3 / 0.2 and an epoch of N: the first two down-sampled
           (each index one keyed pass permutation more), the third
           up-sampled 4x in whole passes (no permutation).

Each figure is the median of --repeats runs on one shardd. Prints a
Markdown table with the mixture's ratio to the single source.

  tests/bench/run_mixture_bench.py --bin-dir build/bin [--size 1e9]
      [--repeats 3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from shardd_process import ShardDaemon  # noqa: E402

W = 8


def create(bin_dir, address, job, n, mixture):
    cmd = [f"{bin_dir}/shardctl", "--coordinator", address, "create-job",
           "--job", job, "--world-size", str(W),
           "--shuffle-algorithm", "feistel"]
    if mixture:
        sizes = [n * 60 // 100, n * 35 // 100]
        sizes.append(n - sum(sizes))
        cmd += ["--source", f"web:{sizes[0]}:weight=0.5",
                "--source", f"books:{sizes[1]}:weight=0.3",
                "--source", f"code:{sizes[2]}:weight=0.2",
                "--epoch-size", str(n)]
    else:
        cmd += ["--size", str(n)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def measure(bin_dir, address, job):
    out = subprocess.run(
        [f"{bin_dir}/shard-sampler-bench", "--coordinator", address,
         "--job", job, "--world-size", str(W)],
        check=True, capture_output=True, text=True).stdout
    report = json.loads(out.strip().splitlines()[-1])
    return report["first_index_s"], report["drain_s"], report["indices"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--size", default="1e9")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n = int(float(args.size))
    rows = {}
    with ShardDaemon(args.bin_dir) as daemon:
        for kind in ("single", "mixture"):
            runs = []
            for run in range(args.repeats):
                job = f"{kind}-{run}"
                create(args.bin_dir, daemon.address, job, n,
                       kind == "mixture")
                runs.append(measure(args.bin_dir, daemon.address, job))
                print(f"{kind} run {run}: first index {runs[-1][0]:.4f} s, "
                      f"drain {runs[-1][1]:.3f} s", file=sys.stderr,
                      flush=True)
            rows[kind] = (statistics.median(r[0] for r in runs),
                          statistics.median(r[1] for r in runs), runs[0][2])
    print(f"N = {n:.0e}, rank 0 of W = {W}, feistel shuffle, median of "
          f"{args.repeats}\n")
    print("| job | first index | drain | indices/s | drain vs single |")
    print("| --- | --- | --- | --- | --- |")
    single_drain = rows["single"][1]
    for kind, (first, drain, indices) in rows.items():
        print(f"| {kind} | {first * 1000:.1f} ms | {drain:.3f} s | "
              f"{indices / drain:.3g} | {drain / single_drain:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
