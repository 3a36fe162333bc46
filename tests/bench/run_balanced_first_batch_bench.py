#!/usr/bin/python3
"""What balanced batches cost a coordinator, in one run on one shardd: the
time from opening rank 0's stream of epoch 0 to its first index (a plain
job) or its first micro-batch (the same job with balanced batches: the
first window arranged), for a new job of --samples samples and W = 8
(median of --repeats new jobs each, each created --settle seconds after
the previous one, on an idle coordinator), the time to upload the costs,
and the coordinator's resident memory before and after the costs are
held (VmRSS of shardd; the costs fit 16 bits, so 2 bytes a sample).
--baseline-bin-dir measures another build's shardd the same way, after
this one, in the same run.

  tests/bench/run_balanced_first_batch_bench.py --bin-dir build/bin
      --python-dir build/python [--samples 100000000] [--repeats 3]
      [--settle 5] [--baseline-bin-dir DIR]
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

sys.path.insert(0, HERE)
from fresh_daemon_runs import rss_mib  # noqa: E402

WORLD = 8


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


def measure(bin_dir, costs, samples, repeats, settle_s):
    """One shardd of `bin_dir`: the upload, its memory, and each repeat's
    first index (plain) and first micro-batch (balanced), in seconds."""
    import shard
    with ShardDaemon(bin_dir) as daemon:
        client = shard.Client(daemon.address)
        before = rss_mib(daemon.pid)
        began = time.perf_counter()
        digest = client.put_costs(costs)
        upload = time.perf_counter() - began
        after = rss_mib(daemon.pid)
        plain, batched = [], []
        for repeat in range(repeats):
            # Each job on an idle coordinator: the previous job's order
            # is no longer being shuffled.
            time.sleep(settle_s)
            plain.append(first_item(
                client, f"plain-{repeat}",
                shard.job_spec(samples, WORLD, seed=repeat), False))
            time.sleep(settle_s)
            batched.append(first_item(
                client, f"batched-{repeat}",
                shard.job_spec(samples, WORLD, seed=repeat,
                               batch_tokens=8192, costs_sha256=digest), True))
        held = rss_mib(daemon.pid)
    return {"upload": upload, "rss": (before, after, held),
            "plain": plain, "batched": batched}


def report(name, figures):
    plain = statistics.median(figures["plain"])
    batched = statistics.median(figures["batched"])
    before, after, held = figures["rss"]
    print(f"{name}:")
    print(f"  costs upload: {figures['upload']:.2f} s")
    print(f"  shardd VmRSS: {before:.0f} MiB before, {after:.0f} MiB with the "
          f"costs, {held:.0f} MiB after the jobs")
    print(f"  first index, plain job:        {1000 * plain:.1f} ms "
          f"(median of {len(figures['plain'])})")
    print(f"  first micro-batch, same job:   {1000 * batched:.1f} ms")
    print(f"  difference:                    {1000 * (batched - plain):.1f} ms")
    for kind in ("plain", "batched"):
        each = ", ".join(f"{1000 * t:.1f}" for t in sorted(figures[kind]))
        print(f"  each {kind} job (ms, sorted): {each}")


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("--samples", type=int, default=100_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--settle", type=float, default=5.0,
                        help="seconds to wait before each new job")
    parser.add_argument("--baseline-bin-dir",
                        help="another build's shardd, measured in the same "
                             "run after this one")
    args = parser.parse_args()
    if args.samples < 1 or args.repeats < 1:
        parser.error("--samples and --repeats must be at least 1")
    sys.path.insert(0, args.python_dir)
    import numpy as np
    rng = np.random.default_rng(0)
    costs = np.clip(np.rint(rng.lognormal(5, 1, args.samples)), 16,
                    1024).astype(np.uint16)
    print(f"samples: {args.samples}, W = {WORLD}")
    report(args.bin_dir, measure(args.bin_dir, costs, args.samples,
                                 args.repeats, args.settle))
    if args.baseline_bin_dir:
        report(args.baseline_bin_dir,
               measure(args.baseline_bin_dir, costs, args.samples,
                       args.repeats, args.settle))


if __name__ == "__main__":
    main()
