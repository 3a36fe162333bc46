#!/usr/bin/python3
"""First index of an epoch when trainers reach the coordinator (rank 0 of
W = 8, through the Python client), at each --sizes:
  new job      the 8 members join right after CreateJob, then rank 0
               streams epoch 0 (timed from CreateJob's answer);
  recovered    shardd is SIGKILLed with the 8 members joined and restarted
               on its data directory; rank 0 streams epoch 0 again (timed
               from the restarted shardd listening);
  warm         epoch 1, three seconds after epoch 0 was opened;
and, in the same run, python3-torch's torch.randperm(N) with a seeded
generator (what a trainer's own DistributedSampler computes for its first
index), with the new job's share of it. Each figure is the median of
--repeats runs. Prints a Markdown table.

  tests/bench/run_restart_first_index_bench.py --bin-dir build/bin
      --python-dir build/python [--sizes 1e7,1e8] [--repeats 3]
"""
import argparse
import statistics
import sys
import os
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from shardd_process import ShardDaemon  # noqa: E402

W = 8


def torch_randperm_seconds(n):
    import torch
    generator = torch.Generator()
    generator.manual_seed(0)
    began = time.monotonic()
    torch.randperm(n, generator=generator)
    return time.monotonic() - began


def first_index(client, membership, epoch):
    began = time.monotonic()
    stream = client.stream(membership, epoch)
    next(iter(stream))
    elapsed = time.monotonic() - began
    stream.close()
    return elapsed


def one_run(bin_dir, n):
    from shard.client import Client, job_spec
    with ShardDaemon(bin_dir) as daemon:
        client = Client(daemon.address)
        began = time.monotonic()
        client.create_job("bench", job_spec(n, W))
        members = [None] * W

        def join(rank):
            members[rank] = client.join("bench", f"m{rank}", wait=120)
        threads = [threading.Thread(target=join, args=(r,)) for r in range(W)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        rank0 = next(m for m in members if m.rank == 0)
        stream = client.stream(rank0, 0)
        next(iter(stream))
        new_job = time.monotonic() - began
        stream.close()
        time.sleep(3)
        warm = first_index(client, rank0, 1)

        daemon.kill()
        restarted = time.monotonic()
        daemon.restart()
        stream = client.stream(rank0, 0)
        next(iter(stream))
        recovered = time.monotonic() - restarted
        stream.close()
        client.close()
    return new_job, recovered, warm


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("--sizes", default="1e7,1e8")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, args.python_dir)
    print(f"rank 0 of W={W}, median of {args.repeats}\n")
    print("| N | new job (from CreateJob) | recovered (from the restart) | "
          "warm epoch | torch.randperm(N) | new job / randperm |")
    print("| --- | --- | --- | --- | --- | --- |")
    for n in (int(float(s)) for s in args.sizes.split(",")):
        runs = [one_run(args.bin_dir, n) for _ in range(args.repeats)]
        new_job, recovered, warm = (statistics.median(r[i] for r in runs)
                                    for i in range(3))
        randperm = statistics.median(torch_randperm_seconds(n)
                                     for _ in range(args.repeats))
        print(f"| {n:.0e} | {new_job:.3f} s | {recovered:.3f} s | "
              f"{warm:.4f} s | {randperm:.3f} s | 1/{randperm / new_job:.1f} |",
              flush=True)


if __name__ == "__main__":
    main()
