#!/usr/bin/python3
"""A large job's steady state on one shardd, for several sizes W.

For each W, starts a fresh shardd (its defaults, or --lease) and runs
shard-heartbeat-load-bench: W members join a job of world size W, then
for --seconds every member heartbeats once per --interval (the clients'
default, 2 s), or at the longer interval the coordinator asks for
(shardd --max-heartbeat-rate), while the job commits every 5 s and an unrelated job
heartbeats every 100 ms. Prints a Markdown table: heartbeats per second
sent (and failed), the coordinator's CPU in cores (and the benchmark
client's: both share this machine), its RSS and threads, the other job's
heartbeat p50 / p99 / max, and how long each call held the coordinator
core's lock.

  tests/bench/run_heartbeat_load_bench.py --bin-dir build/bin
      [--members 16000,32000,100000] [--interval 2] [--seconds 20]
"""
import argparse

from fresh_daemon_runs import add_daemon_arguments, run_per_size


def main():
    parser = argparse.ArgumentParser()
    add_daemon_arguments(parser)
    parser.add_argument("--members", default="16000,32000,100000")
    parser.add_argument("--interval", default="2")
    parser.add_argument("--seconds", default="20")
    args = parser.parse_args()
    rows = run_per_size(args, "shard-heartbeat-load-bench", "members",
                        [int(w) for w in args.members.split(",")],
                        extra=("--interval", args.interval, "--seconds",
                               args.seconds))
    print("\n| W | interval asked | heartbeats / s (failed) | "
          "coordinator CPU | client CPU | "
          "coordinator RSS | threads | other job's heartbeat p50 / p99 / "
          "max | core lock held per call p50 / p99 / max |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['members']} | {r['asked_interval_s']:.1f} s | "
              f"{r['heartbeats_per_s']:.0f} "
              f"({r['heartbeats_failed']}) | "
              f"{r['coordinator_cores']:.2f} cores | "
              f"{r['client_cores']:.2f} cores | "
              f"{r['coordinator_rss_mib']:.0f} MiB | "
              f"{r['coordinator_threads']:.0f} | "
              f"{r['steady_hb_p50_ms']:.1f} / {r['steady_hb_p99_ms']:.1f} / "
              f"{r['steady_hb_max_ms']:.1f} ms | "
              f"<= {r['lock_p50_ms']:.3f} / <= {r['lock_p99_ms']:.3f} / "
              f"{r['lock_max_ms']:.2f} ms |")


if __name__ == "__main__":
    main()
