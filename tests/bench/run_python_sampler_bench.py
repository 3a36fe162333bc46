#!/usr/bin/python3
"""Python samplers side by side: shard.torch.DistributedShardSampler (warm
epoch, over a real shardd) against torch's DistributedSampler, rank 0 of
W = 8, for each N (default 1e6, 1e7, 1e8): time to the first index, time to
iterate the whole epoch in Python, and the peak RSS of the sampler's
process. Each figure is the median of --repeats runs, all in this one run;
prints a Markdown table with the ratios.

  tests/bench/run_python_sampler_bench.py --bin-dir build/bin
      --python-dir build/python [--sizes 1e6,1e7,1e8] [--repeats 3]
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


def run(cmd):
    out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                         timeout=1800)
    return json.loads(out.stdout.strip().splitlines()[-1])


def median(runs, key):
    return statistics.median(r[key] for r in runs)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("--sizes", default="1e6,1e7,1e8")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for n in (int(float(s)) for s in args.sizes.split(",")):
        shard_runs, torch_runs = [], []
        for rep in range(args.repeats):
            with ShardDaemon(args.bin_dir) as daemon:
                subprocess.run(
                    [f"{args.bin_dir}/shardctl", "--coordinator",
                     daemon.address, "create-job", "--job", "bench",
                     "--size", str(n), "--world-size", str(W)],
                    check=True, capture_output=True)
                shard_runs.append(run(
                    [sys.executable, os.path.join(HERE,
                                                  "python_shard_sampler.py"),
                     args.python_dir, daemon.address, "bench", str(n),
                     str(W), "1"]))
            torch_runs.append(run(
                [sys.executable, os.path.join(HERE, "python_sampler.py"),
                 str(n), str(W), "1"]))
            print(f"N={n:.0e} run {rep + 1}: shard {shard_runs[-1]} "
                  f"torch {torch_runs[-1]}", file=sys.stderr, flush=True)
        rows.append((n, shard_runs, torch_runs))
    print(f"\nrank 0 of W = {W}, epoch 1 (warm), median of {args.repeats}\n")
    print("| N | sampler | first index | whole epoch | peak RSS |")
    print("|---|---|---|---|---|")
    for n, shard_runs, torch_runs in rows:
        for name, runs in (("shard.torch.DistributedShardSampler",
                            shard_runs),
                           ("torch DistributedSampler", torch_runs)):
            print(f"| {n:.0e} | {name} | {median(runs, 'first_index_s'):.4f} s "
                  f"| {median(runs, 'drain_s'):.2f} s | "
                  f"{median(runs, 'peak_rss_mib'):.0f} MiB |")
    print("\n| N | first index: torch / shard | whole epoch: torch / shard "
          "| RSS: torch / shard |")
    print("|---|---|---|---|")
    for n, shard_runs, torch_runs in rows:
        ratio = lambda key: median(torch_runs, key) / median(shard_runs, key)
        print(f"| {n:.0e} | {ratio('first_index_s'):.0f}x | "
              f"{ratio('drain_s'):.2f}x | {ratio('peak_rss_mib'):.1f}x |")


if __name__ == "__main__":
    main()
