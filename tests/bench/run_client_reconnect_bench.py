#!/usr/bin/python3
"""How soon clients get their answer from a coordinator restarted under
them: shardd (--data-dir) is SIGKILLed and started again after --outages
seconds on the same address; a call started at the kill is timed from the
moment the restarted shardd serves (it printed "listening on") to its
answer. Clients: `shardctl status` (the C++ client), the Python client's
get_job(), and a Python stream of a shard of 10^6 indices opened before
the kill (to the end of the shard, which takes a few tenths of a second by
itself). Median and max of --repeats runs each; prints a Markdown table.

  tests/bench/run_client_reconnect_bench.py --bin-dir build/bin
      --python-dir build/python [--outages 0.1,1,3] [--repeats 5]
"""
import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from shardd_process import ShardDaemon  # noqa: E402


def timed_across_restart(daemon, outage, call):
    """Seconds from the restarted daemon serving to call()'s answer (call
    starts at the kill)."""
    done = {}

    def run():
        done["result"] = call()
        done["at"] = time.monotonic()

    daemon.kill()
    caller = threading.Thread(target=run)
    caller.start()
    time.sleep(outage)
    daemon.restart()
    serving = time.monotonic()
    caller.join(timeout=120)
    return done["at"] - serving


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("--outages", default="0.1,1,3")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    sys.path.insert(0, args.python_dir)
    import shard
    outages = [float(o) for o in args.outages.split(",")]
    rows = []
    with ShardDaemon(args.bin_dir) as daemon:
        with shard.Client(daemon.address) as creator:
            creator.create_job("j", shard.job_spec(10 ** 6, 1))
        client = shard.Client(daemon.address)
        member = client.join("j", "m0", progress=None)
        heartbeat = client.start_heartbeat(member, interval=1.0)
        epoch = [0]

        def shardctl():
            subprocess.run([f"{args.bin_dir}/shardctl", "--coordinator",
                            daemon.address, "status"], check=True,
                           capture_output=True, timeout=120)

        def python_stream():
            stream = client.stream(member, epoch[0], 0, prefetch_bytes=1 << 12,
                                   chunk_indices=256)
            epoch[0] += 1
            next(stream)

            def rest():
                sum(len(chunk) for chunk in stream)
            return stream, rest

        for outage in outages:
            times = {"shardctl status": [], "Python get_job": [],
                     "Python stream (to its end)": []}
            for _ in range(args.repeats):
                times["shardctl status"].append(
                    timed_across_restart(daemon, outage, shardctl))
                times["Python get_job"].append(timed_across_restart(
                    daemon, outage, lambda: client.get_job("j")))
                stream, rest = python_stream()
                times["Python stream (to its end)"].append(
                    timed_across_restart(daemon, outage, rest))
                stream.close()
            for name, values in times.items():
                rows.append((outage, name, statistics.median(values),
                             max(values)))
                print(f"outage {outage} s, {name}: {[round(v, 2) for v in values]} median "
                      f"{statistics.median(values):.2f} s, max "
                      f"{max(values):.2f} s", file=sys.stderr, flush=True)
        heartbeat.stop()
        client.close()
    print("| outage | client | answered after the restart: median | max |")
    print("| --- | --- | --- | --- |")
    for outage, name, median, worst in rows:
        print(f"| {outage:g} s | {name} | {median:.2f} s | {worst:.2f} s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
