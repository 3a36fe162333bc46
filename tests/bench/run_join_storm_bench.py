#!/usr/bin/python3
"""Join storm and waiting-call load on one shardd, for several sizes W.

For each W, starts a fresh shardd (its default --lease 10s, or --lease)
and runs shard-join-storm-bench: W members join a job of world size W at once (time
until the world formed), then W joins park on a job that never fills
(coordinator threads and RSS while they wait, then all cancelled), while an
unrelated job heartbeats every 100 ms (p50/p99/max of its latency in each
phase). Prints a Markdown table, with how long each call held the
coordinator core's lock (p50 and p99 as the bound of their histogram
bucket, and the max).

  tests/bench/run_join_storm_bench.py --bin-dir build/bin
      [--joins 1000,2000,4000,8000] [--shardd-dir DIR] [--lease 5m]

The benchmark's members do not heartbeat once their join returned (a
trainer's do): at 100,000 on a 2-core machine the first answered ones
outlive the default 10 s lease before the last join is answered, and the
world ends again; --lease gives shardd a longer one, so that the figures
are the joins' alone.

--shardd-dir runs the shardd found there instead (e.g. an older build, for
a side-by-side comparison with the same benchmark client).
"""
import argparse

from fresh_daemon_runs import add_daemon_arguments, run_per_size


def main():
    parser = argparse.ArgumentParser()
    add_daemon_arguments(parser)
    parser.add_argument("--joins", default="1000,2000,4000,8000")
    args = parser.parse_args()
    rows = run_per_size(args, "shard-join-storm-bench", "joins",
                        [int(w) for w in args.joins.split(",")])
    print("\n| W | world formed in | CPU during the storm: coordinator / "
          "client | heartbeat p50 / p99 / max during the storm | W joins parked: heartbeat p50 / p99 / max | coordinator "
          "threads idle -> W parked -> 1 s after cancelling them | coordinator "
          "RSS, W parked | core lock held per call p50 / p99 / max | core "
          "lock holds over 1 ms / 5 ms |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['joins']} | {r['form_s']:.2f} s ({r['formed']} ok) | "
              f"{r['storm_coordinator_cpu_s']:.1f} / "
              f"{r['storm_client_cpu_s']:.1f} s | "
              f"{r['storm_hb_p50_ms']:.1f} / {r['storm_hb_p99_ms']:.1f} / "
              f"{r['storm_hb_max_ms']:.1f} ms | "
              f"{r['waiting_hb_p50_ms']:.1f} / {r['waiting_hb_p99_ms']:.1f} / "
              f"{r['waiting_hb_max_ms']:.1f} ms | "
              f"{r['threads_before']:.0f} -> {r['threads_waiting']:.0f} -> "
              f"{r['threads_after_cancel']:.0f} | "
              f"{r['rss_waiting_mib']:.0f} MiB | "
              f"<= {r['lock_p50_ms']:.3f} / <= {r['lock_p99_ms']:.3f} / "
              f"{r['lock_max_ms']:.2f} ms | "
              f"{r['lock_over_1ms']:.0f} / {r['lock_over_5ms']:.0f} |")


if __name__ == "__main__":
    main()
