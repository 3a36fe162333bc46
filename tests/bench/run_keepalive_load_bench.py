#!/usr/bin/python3
"""Keepalive pings of parked calls on one shardd, for several sizes C.

For each C, starts a fresh shardd (its defaults, or --lease) and runs
shard-keepalive-load-bench: C client connections with the client
library's keepalive (a ping every 3 s while a call is open), each holding
one join parked on a job that never fills; then for --seconds nothing but
the pings reaches the coordinator. Prints a Markdown table: the
coordinator's CPU in cores before the joins and while they are parked
(and the benchmark client's: both share this machine), the coordinator's
CPU per connection, its RSS and threads, and an unrelated job's heartbeat
p50 / p99 / max. --no-pings runs each C again without keepalive pings, so
that the pings' share can be told from the parked calls'.

Each connection is a file descriptor on both sides: C must stay under the
open-file limit (`ulimit -n`) and the loopback's ephemeral ports.

  tests/bench/run_keepalive_load_bench.py --bin-dir build/bin
      [--connections 1000,5000,15000] [--seconds 30] [--no-pings]
"""
import argparse

from fresh_daemon_runs import add_daemon_arguments, run_per_size


def main():
    parser = argparse.ArgumentParser()
    add_daemon_arguments(parser)
    parser.add_argument("--connections", default="1000,5000,15000")
    parser.add_argument("--seconds", default="30")
    parser.add_argument("--no-pings", action="store_true",
                        help="also run each C without keepalive pings")
    args = parser.parse_args()
    sizes = [int(c) for c in args.connections.split(",")]
    rows = run_per_size(args, "shard-keepalive-load-bench", "connections",
                        sizes, extra=("--seconds", args.seconds))
    if args.no_pings:
        rows += run_per_size(args, "shard-keepalive-load-bench",
                             "connections", sizes,
                             extra=("--seconds", args.seconds, "--no-pings"))
    print("\n| C | pings | coordinator CPU before the joins / C parked | per "
          "connection | client CPU | coordinator RSS | threads | other "
          "job's heartbeat p50 / p99 / max |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        per_connection_us = (1e6 * (r["coordinator_cores"] -
                                    r["idle_coordinator_cores"]) /
                             r["connections"])
        print(f"| {r['connections']} | "
              f"{'every 3 s' if r['pings'] else 'none'} | "
              f"{r['idle_coordinator_cores']:.3f} / "
              f"{r['coordinator_cores']:.3f} cores | "
              f"{per_connection_us:.1f} us/s | "
              f"{r['client_cores']:.3f} cores | "
              f"{r['coordinator_rss_mib']:.0f} MiB | "
              f"{r['coordinator_threads']:.0f} | "
              f"{r['parked_hb_p50_ms']:.1f} / {r['parked_hb_p99_ms']:.1f} / "
              f"{r['parked_hb_max_ms']:.1f} ms |")


if __name__ == "__main__":
    main()
