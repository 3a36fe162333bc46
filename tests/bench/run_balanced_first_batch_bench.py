#!/usr/bin/python3
"""What balanced batches cost a coordinator, in one run on one shardd: the
time from opening rank 0's stream of epoch 0 to its first index (a plain
job) or its first micro-batch (the same job with balanced batches: the
first window arranged), for a new job of --samples samples and W = 8
(median of --repeats new jobs each), the time to upload the costs, and the
coordinator's resident memory before and after the costs are held
(VmRSS of shardd; the costs fit 16 bits, so 2 bytes a sample).

  tests/bench/run_balanced_first_batch_bench.py --bin-dir build/bin
      --python-dir build/python [--samples 100000000] [--repeats 3]
"""
import argparse
import os
import statistics
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from shardd_process import ShardDaemon  # noqa: E402

WORLD = 8


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def first_item(client, job, spec, batched):
    """Joins all W members, then times rank 0's first index / batch."""
    members = [None] * WORLD

    def join(m):
        members[m] = client.join(job, f"m{m}", spec=spec, wait=300)
    threads = [threading.Thread(target=join, args=(m,)) for m in range(WORLD)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rank0 = next(m for m in members if m.rank == 0)
    began = time.perf_counter()
    stream = (client.stream_batches(rank0, 0) if batched
              else client.stream(rank0, 0))
    next(iter(stream))
    elapsed = time.perf_counter() - began
    stream.close()
    for member in members:
        client.leave(member)
    client.delete_job(job)
    return elapsed


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("--samples", type=int, default=100_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, args.python_dir)
    import numpy as np
    import shard
    rng = np.random.default_rng(0)
    costs = np.clip(np.rint(rng.lognormal(5, 1, args.samples)), 16,
                    1024).astype(np.uint16)
    with ShardDaemon(args.bin_dir) as daemon:
        client = shard.Client(daemon.address)
        before = rss_mib(daemon.pid)
        began = time.perf_counter()
        digest = client.put_costs(costs)
        upload = time.perf_counter() - began
        after = rss_mib(daemon.pid)
        plain, batched = [], []
        for repeat in range(args.repeats):
            plain.append(first_item(
                client, f"plain-{repeat}",
                shard.job_spec(args.samples, WORLD, seed=repeat), False))
            batched.append(first_item(
                client, f"batched-{repeat}",
                shard.job_spec(args.samples, WORLD, seed=repeat,
                               batch_tokens=8192, costs_sha256=digest), True))
        held = rss_mib(daemon.pid)
    print(f"samples: {args.samples}, W = {WORLD}")
    print(f"costs upload: {upload:.2f} s")
    print(f"shardd VmRSS: {before:.0f} MiB before, {after:.0f} MiB with the "
          f"costs, {held:.0f} MiB after the jobs")
    print(f"first index, plain job:        "
          f"{1000 * statistics.median(plain):.1f} ms (median of {len(plain)})")
    print(f"first micro-batch, same job:   "
          f"{1000 * statistics.median(batched):.1f} ms")
    print(f"difference:                    "
          f"{1000 * (statistics.median(batched) - statistics.median(plain)):.1f} ms")


if __name__ == "__main__":
    main()
