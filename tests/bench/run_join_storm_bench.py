#!/usr/bin/python3
"""Join storm and waiting-call load on one shardd, for several sizes W.

For each W, starts a fresh shardd (--lease 10s) and runs
shard-join-storm-bench: W members join a job of world size W at once (time
until the world formed), then W joins park on a job that never fills
(coordinator threads and RSS while they wait, then all cancelled), while an
unrelated job heartbeats every 100 ms (p50/p99/max of its latency in each
phase). Prints a Markdown table.

  tests/bench/run_join_storm_bench.py --bin-dir build/bin
      [--joins 1000,2000,4000,8000] [--shardd-dir DIR]

--shardd-dir runs the shardd found there instead (e.g. an older build, for
a side-by-side comparison with the same benchmark client).
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                "conformance"))
from shardd_process import ShardDaemon  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--joins", default="1000,2000,4000,8000")
    parser.add_argument("--shardd-dir", help="directory of the shardd to run "
                        "(default: --bin-dir)")
    args = parser.parse_args()
    rows = []
    for joins in (int(w) for w in args.joins.split(",")):
        print(f"W = {joins} ...", file=sys.stderr, flush=True)
        with ShardDaemon(args.shardd_dir or args.bin_dir) as daemon:
            out = subprocess.run(
                [f"{args.bin_dir}/shard-join-storm-bench", "--coordinator",
                 daemon.address, "--coordinator-pid", str(daemon.pid),
                 "--joins", str(joins)],
                capture_output=True, text=True, timeout=900)
            if out.returncode != 0:
                print(out.stderr, file=sys.stderr)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            print(json.dumps(result), file=sys.stderr, flush=True)
            rows.append(result)
    print("\n| W | world formed in | heartbeat p50 / p99 / max during the "
          "storm | W joins parked: heartbeat p50 / p99 / max | coordinator "
          "threads idle -> W parked -> 1 s after cancelling them | coordinator "
          "RSS, W parked |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['joins']} | {r['form_s']:.2f} s ({r['formed']} ok) | "
              f"{r['storm_hb_p50_ms']:.1f} / {r['storm_hb_p99_ms']:.1f} / "
              f"{r['storm_hb_max_ms']:.1f} ms | "
              f"{r['waiting_hb_p50_ms']:.1f} / {r['waiting_hb_p99_ms']:.1f} / "
              f"{r['waiting_hb_max_ms']:.1f} ms | "
              f"{r['threads_before']:.0f} -> {r['threads_waiting']:.0f} -> "
              f"{r['threads_after_cancel']:.0f} | "
              f"{r['rss_waiting_mib']:.0f} MiB |")


if __name__ == "__main__":
    main()
