#!/usr/bin/python3
"""What serving balanced batches costs the coordinator as the world grows,
in one run: a job of --samples lognormal lengths (mu 5, sigma 1, clamped
to [16, 1024]) with a token budget of 8,192 (--cost-model padded, or sum:
packed sequences) and the default window (the job gives the costs' sum,
as the clients do: a token budget's window then holds 256 steps at the
mean cost); for
each W of --worlds, W ranks join and drain epoch 0 together, step by
step as DDP ranks train (one Python client reads each rank's next
micro-batch in turn; each stream reads ahead as the client does). Prints, per W: the wall time of the drain, the coordinator's CPU
time over it (user + system of shardd, from /proc), the windows it
arranged (its metric shard_batch_windows_arranged_total), its CPU time per
million samples served, and the samples served (the epoch once, plus the
pad tail's repeats). With --baseline-bin-dir the same against another
shardd (a fresh one for each W and build), for a ratio in one run.

  tests/bench/run_balanced_streams_bench.py --bin-dir build/bin
      --python-dir build/python [--samples 10000000] [--worlds 8,64]
      [--cost-model padded|sum] [--baseline-bin-dir DIR]
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from python_client_runs import join_world  # noqa: E402
from shardd_process import ShardDaemon  # noqa: E402

def cpu_seconds(pid):
    """User + system CPU time of process `pid` so far."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def windows_arranged(metrics_address):
    """shard_batch_windows_arranged_total from shardd's metrics."""
    import urllib.request
    with urllib.request.urlopen(f"http://{metrics_address}/metrics") as page:
        for line in page.read().decode().splitlines():
            if line.startswith("shard_batch_windows_arranged_total "):
                return int(float(line.split()[1]))
    return None  # a shardd without the metric


def drain_in_step(client, members):
    """Every member drains epoch 0, step by step as DDP ranks train (each
    rank's next micro-batch, rank after rank); returns the samples
    served."""
    streams = [client.stream_batches(member, 0) for member in members]
    served = 0
    while streams:
        for stream in list(streams):
            batch = next(stream, None)
            if batch is None:
                streams.remove(stream)
            else:
                served += len(batch[0])
    return served


def measure(bin_dir, costs, world, cost_model):
    """(wall seconds, coordinator CPU seconds, samples served, windows
    arranged or None)."""
    import shard
    # The ranks do not heartbeat: a lease longer than the drain.
    with ShardDaemon(bin_dir, "--lease", "10m", "--metrics-listen",
                     "127.0.0.1:0") as daemon:
        client = shard.Client(daemon.address)
        digest = client.put_costs(costs)
        client.create_job("streams", shard.job_spec(
            len(costs), world, seed=1, batch_tokens=8192,
            cost_model=cost_model, costs_sha256=digest,
            costs_total=shard.costs_total(costs)))
        members = join_world(client, "streams", world)
        cpu_before = cpu_seconds(daemon.pid)
        began = time.perf_counter()
        served = drain_in_step(client, members)
        wall = time.perf_counter() - began
        cpu = cpu_seconds(daemon.pid) - cpu_before
        arranged = windows_arranged(daemon.metrics_address)
        client.close()
    return wall, cpu, served, arranged


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("--samples", type=int, default=10_000_000)
    parser.add_argument("--worlds", default="8,64")
    parser.add_argument("--baseline-bin-dir")
    parser.add_argument("--cost-model", choices=("padded", "sum"),
                        default="padded")
    args = parser.parse_args()
    sys.path.insert(0, args.python_dir)
    import numpy as np
    rng = np.random.default_rng(0)
    costs = np.clip(np.rint(rng.lognormal(5, 1, args.samples)), 16,
                    1024).astype(np.uint16)
    builds = [("this", args.bin_dir)]
    if args.baseline_bin_dir:
        builds.append(("baseline", args.baseline_bin_dir))
    print(f"samples: {args.samples}, batch_tokens 8192, cost model "
          f"{args.cost_model}, the default window")
    print("shardd | W | drain | coordinator CPU | windows arranged | "
          "CPU per 10^6 samples | served")
    for world in (int(w) for w in args.worlds.split(",")):
        for name, bin_dir in builds:
            wall, cpu, served, arranged = measure(bin_dir, costs, world,
                                                  args.cost_model)
            print(f"{name} | {world} | {wall:.2f} s | {cpu:.2f} s | "
                  f"{'-' if arranged is None else arranged} | "
                  f"{1e9 * cpu / served:.1f} ms | {served}", flush=True)


if __name__ == "__main__":
    main()
