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

from torch.utils.data.distributed import DistributedSampler


def main():
    n, w, epoch = map(int, sys.argv[1:4])
    start = time.perf_counter()
    sampler = DistributedSampler(range(n), num_replicas=w, rank=0, seed=0)
    sampler.set_epoch(epoch)
    it = iter(sampler)
    next(it)
    first = time.perf_counter()
    total = 1
    for _ in it:
        total += 1
    drain = time.perf_counter()
    print(json.dumps({
        "mode": "python", "first_index_s": first - start,
        "drain_s": drain - start, "indices": total,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


if __name__ == "__main__":
    main()
