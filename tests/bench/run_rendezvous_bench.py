#!/usr/bin/python3
"""The process group's rendezvous for several world sizes W: for each W, a
fresh shardd (its default flags, or --lease) and shard-rendezvous-bench: W
members join a job of W, ranks 1..W-1 wait in StoreGet for a key, rank 0
sets it. Prints a Markdown table: the world formed in, the time from the
set until every waiter (and the median one) had the value, the
coordinator's RSS before and with the W-1 StoreGets parked, and the CPU
the coordinator and the benchmark's client spent during the fan-out.

  tests/bench/run_rendezvous_bench.py --bin-dir build/bin
      [--ranks 1000,16000] [--lease 5m] [--shardd-dir DIR]

The benchmark's members do not heartbeat (a trainer's do): at 100,000 on
a 2-core machine give shardd --lease 5m, as for run_join_storm_bench.py.
"""
import argparse

from fresh_daemon_runs import add_daemon_arguments, run_per_size


def main():
    parser = argparse.ArgumentParser()
    add_daemon_arguments(parser)
    parser.add_argument("--ranks", default="1000,16000")
    args = parser.parse_args()
    rows = run_per_size(args, "shard-rendezvous-bench", "ranks",
                        [int(w) for w in args.ranks.split(",")])
    print("\n| W | world formed in | all W-1 waiters answered after the set "
          "(median) | waiters with the value | coordinator RSS before -> "
          "W-1 StoreGets parked | CPU during the fan-out: coordinator / "
          "client |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['ranks']} | {r['form_s']:.2f} s | "
              f"{r['all_answered_s']:.3f} s ({r['median_answered_s']:.3f} s) "
              f"| {r['found']} of {r['waiters']} | "
              f"{r['rss_before_mib']:.0f} -> {r['rss_parked_mib']:.0f} MiB | "
              f"{r['fan_out_coordinator_cpu_s']:.2f} / "
              f"{r['fan_out_client_cpu_s']:.2f} s |")


if __name__ == "__main__":
    main()
