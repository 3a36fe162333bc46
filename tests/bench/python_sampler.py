#!/usr/bin/python3
"""python3-torch DistributedSampler for rank 0, in its own process.

Usage: python_sampler.py N W EPOCH. Prints the same JSON line as
shard-sampler-bench. The clock starts before the sampler is constructed
(after `import torch`, which is not counted).
"""
import json
import resource
import sys
import time


def report(mode, start, iterator):
    """Times `iterator` from `start` (perf_counter) to its first item and
    to its end, and prints the JSON line."""
    next(iterator)
    first = time.perf_counter()
    total = 1
    for _ in iterator:
        total += 1
    drain = time.perf_counter()
    print(json.dumps({
        "mode": mode, "first_index_s": first - start,
        "drain_s": drain - start, "indices": total,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


def main():
    from torch.utils.data.distributed import DistributedSampler
    n, w, epoch = map(int, sys.argv[1:4])
    start = time.perf_counter()
    sampler = DistributedSampler(range(n), num_replicas=w, rank=0, seed=0)
    sampler.set_epoch(epoch)
    report("python", start, iter(sampler))


if __name__ == "__main__":
    main()
