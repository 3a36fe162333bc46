#!/usr/bin/python3
"""Warm epochs: the first index of each new epoch when a trainer moves on
without committing (rank 0 of W = 8, N = --size), in the patterns
trainers use: rank 0 opens epoch e, reads its first chunk, then leaves it
open (until e + 1 is open), drains it (reads its shard to the end) or
closes it, and waits a pause before it opens e + 1. Epoch e takes the
(e mod 3)-th pattern and the (e mod 5)-th pause of --pauses-ms, so every
pair recurs. For --epochs epochs, p50, p99, max and the count of epochs
over 10 ms of the time to the first index, through the Python client (in
this process) and the C++ client (shard-sampler-bench --warm-epochs),
each against a fresh shardd from --bin-dir (and, with --baseline-bin-dir,
from that one too, in the same run). Prints a Markdown table.

  tests/bench/run_warm_epoch_bench.py --bin-dir build/bin
      --python-dir build/python [--size 1e6] [--epochs 300]
      [--pauses-ms 300,700,1000,1500,2000] [--baseline-bin-dir DIR]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from shardd_process import ShardDaemon  # noqa: E402
from python_client_runs import join_world, servers_to_compare  # noqa: E402

W = 8
PATTERNS = ("open", "drained", "closed")
SLOW_MS = 10.0


def python_latencies(address, n, epochs, pauses):
    from shard.client import Client, job_spec
    client = Client(address)
    client.create_job("warm-python", job_spec(n, W))
    members = join_world(client, "warm-python", W)
    rank0 = members[0]
    # The run outlasts a lease: the members stay alive.
    heartbeats = [client.start_heartbeat(m) for m in members]
    latencies, kept_open = [], None
    for epoch in range(epochs + 1):
        opened = time.monotonic()
        stream = client.stream(rank0, epoch)
        chunks = iter(stream)
        next(chunks)
        if epoch > 0:
            latencies.append((time.monotonic() - opened) * 1e3)
        if kept_open is not None:
            kept_open.close()
            kept_open = None
        pattern = PATTERNS[epoch % len(PATTERNS)]
        if pattern == "open":
            kept_open = stream
        else:
            if pattern == "drained":
                for _ in chunks:
                    pass
            stream.close()
        time.sleep(pauses[epoch % len(pauses)] / 1e3)
    if kept_open is not None:
        kept_open.close()
    for heartbeat in heartbeats:
        heartbeat.stop()
    for m in members:
        client.leave(m)
    client.close()
    return latencies


def cpp_latencies(bin_dir, address, n, epochs, pauses):
    subprocess.run([os.path.join(bin_dir, "shardctl"), "--coordinator",
                    address, "create-job", "--job", "warm-cpp", "--size",
                    str(n), "--world-size", str(W)], check=True,
                   capture_output=True)
    out = subprocess.run(
        [os.path.join(bin_dir, "shard-sampler-bench"), "--coordinator",
         address, "--job", "warm-cpp", "--world-size", str(W),
         "--warm-epochs", str(epochs), "--warm-patterns", ",".join(PATTERNS),
         "--epoch-pauses-ms", ",".join(str(p) for p in pauses)],
        check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["first_index_ms"]


def summary(latencies):
    """p50, p99 (nearest rank), max and the count over SLOW_MS."""
    ordered = sorted(latencies)
    p99 = ordered[max(0, math.ceil(len(ordered) * 0.99) - 1)]
    slow = sum(1 for x in ordered if x > SLOW_MS)
    return statistics.median(ordered), p99, ordered[-1], slow


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("--size", default="1e6")
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--pauses-ms", default="300,700,1000,1500,2000")
    parser.add_argument("--baseline-bin-dir")
    args = parser.parse_args()
    sys.path.insert(0, args.python_dir)
    n = int(float(args.size))
    pauses = [int(p) for p in args.pauses_ms.split(",")]
    rows = []
    for name, server_dir in servers_to_compare(args):
        with ShardDaemon(server_dir) as daemon:
            python = python_latencies(daemon.address, n, args.epochs,
                                      pauses)
            # The C++ client is this build's; only the server differs.
            cpp = cpp_latencies(args.bin_dir, daemon.address, n, args.epochs,
                                pauses)
        for client, latencies in (("python", python), ("C++", cpp)):
            rows.append((name, client, summary(latencies)))
            worst = ", ".join(f"{x:.1f}" for x in sorted(latencies)[-5:])
            print(f"{name}, {client}: five longest {worst} ms",
                  file=sys.stderr, flush=True)
        print(f"[{time.strftime('%H:%M:%S')}] {name} done", file=sys.stderr,
              flush=True)
    print(f"rank 0 of W={W}, N={n:.0e}, {args.epochs} epochs, each left "
          f"{'/'.join(PATTERNS)}, then paused {args.pauses_ms} ms; "
          f"no commits\n")
    print(f"| shardd | client | p50 | p99 | max | epochs over {SLOW_MS:g} ms |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, client, (p50, p99, worst, slow) in rows:
        print(f"| {name} | {client} | {p50:.1f} ms | {p99:.1f} ms | "
              f"{worst:.1f} ms | {slow} of {args.epochs} |")


if __name__ == "__main__":
    main()
