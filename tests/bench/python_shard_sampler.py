#!/usr/bin/python3
"""The Python DistributedShardSampler for rank 0, in its own process.

Usage: python_shard_sampler.py PYTHON_DIR ADDRESS JOB N W EPOCH. The job
must exist with N samples and W ranks; W - 1 other members are joined by
threads of this process so the world forms. Iterates EPOCH - 1 first when
EPOCH > 0 (so the coordinator prepares EPOCH in the background, as during
training; not timed), then prints the JSON line of python_sampler.py for
EPOCH: the clock starts when iter() is called.
"""
import sys
import threading
import time

from python_sampler import report


def main():
    python_dir, address, job = sys.argv[1:4]
    n, w, epoch = map(int, sys.argv[4:7])
    sys.path.insert(0, python_dir)
    import shard
    import shard.torch
    client = shard.Client(address)
    others = [threading.Thread(target=client.join, args=(job, f"other-{i}"),
                               daemon=True) for i in range(1, w)]
    for thread in others:
        thread.start()
    sampler = shard.torch.DistributedShardSampler(
        range(n), coordinator=client, job=job, member="other-0")
    if epoch > 0:
        sampler.set_epoch(epoch - 1)
        for _ in sampler:
            pass
        time.sleep(2)  # Stands in for the rest of an epoch of training.
    sampler.set_epoch(epoch)
    start = time.perf_counter()
    report("shard-python", start, iter(sampler))


if __name__ == "__main__":
    main()
