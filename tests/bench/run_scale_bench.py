#!/usr/bin/python3
"""Coordinator scale benchmark: R ranks streaming one epoch from one shardd.

For each run, starts a fresh shardd, creates a job of N samples (default
1e8, torch shuffle) for R ranks (default 1000), and runs shard-scale-bench:
R client threads over R/10 connections join, then all stream epoch 0 at
once. Reports, as medians of --repeats runs: aggregate indices/s,
coordinator CPU seconds per 10^9 indices (streaming phase), coordinator
peak RSS, and the slowest rank's drain time over the median rank's.

  tests/bench/run_scale_bench.py --bin-dir build/bin [--ranks 1000]
      [--size 1e8] [--shuffle-algorithm torch|feistel] [--repeats 3]
      [--lease 10m]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                "conformance"))
from shardd_process import ShardDaemon  # noqa: E402

KEYS = ("aggregate_indices_per_s", "coordinator_cpu_s_per_1e9", "order_s",
        "coordinator_peak_rss_mib", "rank_drain_median_s",
        "rank_drain_max_s", "slowest_over_median", "wall_s",
        "client_peak_rss_mib")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--ranks", type=int, default=1000)
    parser.add_argument("--size", default="1e8")
    parser.add_argument("--shuffle-algorithm", default="torch")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lease", help="shardd --lease (default: its own); "
                        "the benchmark's ranks do not heartbeat, so an "
                        "order that takes longer than the lease to compute "
                        "(10^9 samples) needs a longer one")
    args = parser.parse_args()
    n = int(float(args.size))
    runs = []
    for rep in range(args.repeats):
        with ShardDaemon(args.bin_dir, *(("--lease", args.lease)
                                         if args.lease else ())) as daemon:
            subprocess.run(
                [f"{args.bin_dir}/shardctl", "--coordinator", daemon.address,
                 "create-job", "--job", "scale", "--size", str(n),
                 "--world-size", str(args.ranks), "--shuffle-algorithm",
                 args.shuffle_algorithm], check=True, capture_output=True)
            out = subprocess.run(
                [f"{args.bin_dir}/shard-scale-bench", "--coordinator",
                 daemon.address, "--job", "scale", "--ranks", str(args.ranks),
                 "--coordinator-pid", str(daemon.pid)],
                capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"shard-scale-bench failed: {out.stderr[-2000:]}")
            result = json.loads(out.stdout.strip().splitlines()[-1])
            runs.append(result)
            print(f"run {rep + 1}/{args.repeats}: {json.dumps(result)}",
                  file=sys.stderr, flush=True)
    med = {k: statistics.median(r[k] for r in runs) for k in KEYS}
    print(f"\n{args.ranks} ranks, N = {n:.0e} ({args.shuffle_algorithm}), "
          f"median of {args.repeats} runs\n")
    print("| aggregate indices/s | coordinator CPU s per 1e9 | coordinator "
          "peak RSS (MiB) | median rank drain (s) | slowest rank (s) | "
          "slowest / median | wall (s) |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {med['aggregate_indices_per_s']:.3g} | "
          f"{med['coordinator_cpu_s_per_1e9']:.1f} | "
          f"{med['coordinator_peak_rss_mib']:.0f} | "
          f"{med['rank_drain_median_s']:.2f} | "
          f"{med['rank_drain_max_s']:.2f} | "
          f"{med['slowest_over_median']:.2f} | {med['wall_s']:.2f} |")


if __name__ == "__main__":
    main()
