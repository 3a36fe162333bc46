#!/usr/bin/python3
"""Commit throughput of one shardd with durable state, for several sizes M.

For each M, starts a fresh shardd (data directory on the local disk, so
every commit is fsynced) and runs shard-commit-throughput-bench: M members,
each the only rank of its own job, commit in a closed loop for --seconds
while an unrelated job heartbeats every 100 ms. Prints a Markdown table,
with how long each call held the coordinator core's lock (p50 and p99 as
the bound of their histogram bucket, and the max).

  tests/bench/run_commit_throughput_bench.py --bin-dir build/bin
      [--members 100,1000] [--seconds 5] [--shardd-dir DIR]

--shardd-dir runs the shardd found there instead (e.g. an older build, for
a side-by-side comparison with the same benchmark client).
"""
import argparse

from fresh_daemon_runs import add_daemon_arguments, run_per_size


def main():
    parser = argparse.ArgumentParser()
    add_daemon_arguments(parser)
    parser.add_argument("--members", default="100,1000")
    parser.add_argument("--seconds", type=int, default=5)
    args = parser.parse_args()
    rows = run_per_size(args, "shard-commit-throughput-bench", "members",
                        [int(m) for m in args.members.split(",")],
                        extra=["--seconds", str(args.seconds)], timeout=600)
    print("\n| M | commits/s | commit p50 / p99 / max | heartbeat p50 / p99 / "
          "max under the load | coordinator threads | core lock held per "
          "call p50 / p99 / max | core lock holds over 1 ms / 5 ms |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['members']} | {r['commits_per_s']:.0f} | "
              f"{r['commit_p50_ms']:.1f} / {r['commit_p99_ms']:.1f} / "
              f"{r['commit_max_ms']:.1f} ms | "
              f"{r['load_hb_p50_ms']:.1f} / {r['load_hb_p99_ms']:.1f} / "
              f"{r['load_hb_max_ms']:.1f} ms | {r['threads']:.0f} | "
              f"<= {r['lock_p50_ms']:.3f} / <= {r['lock_p99_ms']:.3f} / "
              f"{r['lock_max_ms']:.2f} ms | "
              f"{r['lock_over_1ms']:.0f} / {r['lock_over_5ms']:.0f} |")


if __name__ == "__main__":
    main()
