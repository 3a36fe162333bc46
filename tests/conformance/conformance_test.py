#!/usr/bin/python3
"""Conformance: shardd + shardctl give exactly DistributedSampler's indices.

Starts the real shardd on a free port, and for a grid of (N, W, seed, epoch,
shuffle, tail) creates a job, then checks every rank's indices against
torch.utils.data.distributed.DistributedSampler (python3-torch is the
oracle) through two paths: the streaming path (W `shardctl consume`
processes join the job and stream it) and the preview path (`shardctl plan`).
For `uneven`, the expected shard is order[r::W] of the same permutation.
A second grid streams epoch 0 of jobs large enough (N = 2,000,003) that
their order is still being shuffled when the streams open (streams follow
the shuffle), at every tail policy and W = 1, 7, 8.
Exit status 0 when every case matches; the first mismatch is printed.
"""
import argparse
import concurrent.futures
import itertools
import subprocess
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from shardd_process import ShardDaemon  # noqa: E402

import torch  # noqa: E402
from torch.utils.data.distributed import DistributedSampler  # noqa: E402


def oracle(n, w, rank, seed, epoch, shuffle, tail):
    if tail == "uneven":
        if shuffle:
            g = torch.Generator()
            g.manual_seed(seed + epoch)
            order = torch.randperm(n, generator=g).tolist()
        else:
            order = list(range(n))
        return order[rank::w]
    sampler = DistributedSampler(range(n), num_replicas=w, rank=rank,
                                 shuffle=shuffle, seed=seed,
                                 drop_last=(tail == "drop"))
    sampler.set_epoch(epoch)
    return list(sampler)


def grid():
    # N < W, N % W == 0 and != 0, W = 1, large seeds, late epochs.
    sizes_worlds = [(1, 1), (3, 5), (7, 8), (10, 3), (12, 4), (100, 7),
                    (1000, 1), (4099, 16), (50000, 6)]
    seeds = [0, 1234, 2**63 - 1]
    for (n, w), seed, tail in itertools.product(sizes_worlds, seeds,
                                                ["pad", "drop", "uneven"]):
        for shuffle in ([True, False] if seed == 0 else [True]):
            yield n, w, seed, shuffle, tail


def grid_during_the_build():
    for w, tail in itertools.product([1, 7, 8], ["pad", "drop", "uneven"]):
        yield 2000003, w, 0, True, tail


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def consume_all(shardctl, address, job, w, epochs):
    procs = [subprocess.Popen([shardctl, "--coordinator", address, "consume",
                               "--job", job, "--member", f"m{i}",
                               "--epochs", str(epochs), "--wait", "60s"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for i in range(w)]
    # Read every consumer at once: each waits for the others before it
    # leaves (consume's barrier), so one left unread would hold them all.
    with concurrent.futures.ThreadPoolExecutor(len(procs)) as readers:
        outputs = list(readers.map(lambda p: p.communicate(timeout=120),
                                   procs))
    got = {}
    for p, (out, err) in zip(procs, outputs):
        if p.returncode != 0:
            raise RuntimeError(f"consume failed: {err.strip()}")
        for line in out.splitlines():
            epoch, rank, index = map(int, line.split())
            got.setdefault((epoch, rank), []).append(index)
    return got


def check_streams(shardctl, address, job, spec, epochs, plan_epoch):
    """Streams the job's `epochs` and compares every rank with the oracle
    (and the preview path at `plan_epoch`); returns (cases, failures)."""
    n, w, seed, shuffle, tail = spec
    streamed = consume_all(shardctl, address, job, w, len(epochs))
    cases = failures = 0
    for epoch, rank in itertools.product(epochs, range(w)):
        expected = oracle(n, w, rank, seed, epoch, shuffle, tail)
        planned = [int(x) for x in run(
            [shardctl, "--coordinator", address, "plan", "--job", job,
             "--epoch", str(epoch), "--rank",
             str(rank)]).stdout.split()] if epoch == plan_epoch else expected
        got = streamed.get((epoch, rank), [])
        cases += 1
        if got != expected or planned != expected:
            failures += 1
            print(f"MISMATCH N={n} W={w} seed={seed} shuffle={shuffle} "
                  f"tail={tail} epoch={epoch} rank={rank}\n"
                  f"  expected {expected[:20]}\n  streamed {got[:20]}\n"
                  f"  planned  {planned[:20]}")
    return cases, failures


def create_job(shardctl, address, job, spec):
    n, w, seed, shuffle, tail = spec
    run([shardctl, "--coordinator", address, "create-job", "--job", job,
         "--size", str(n), "--world-size", str(w), "--seed", str(seed),
         "--shuffle", str(shuffle).lower(), "--tail", tail])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    args = parser.parse_args()
    shardctl = f"{args.bin_dir}/shardctl"
    cases = failures = 0
    with ShardDaemon(args.bin_dir) as daemon:
        for case, spec in enumerate(grid()):
            n, w, seed, shuffle, tail = spec
            job = f"conf-{case}"
            create_job(shardctl, daemon.address, job, spec)
            more, failed = check_streams(shardctl, daemon.address, job, spec,
                                         [0, 1, 2], plan_epoch=2)
            cases, failures = cases + more, failures + failed
            # The last legal epoch (seed + epoch may pass 2^63), preview path.
            last_epoch = 2**31 - 1
            planned = [int(x) for x in run(
                [shardctl, "--coordinator", daemon.address, "plan", "--job",
                 job, "--epoch", str(last_epoch), "--rank", "0"]).stdout.split()]
            cases += 1
            if planned != oracle(n, w, 0, seed, last_epoch, shuffle, tail):
                failures += 1
                print(f"MISMATCH N={n} W={w} seed={seed} epoch={last_epoch}")
            print(f"ok N={n} W={w} seed={seed} shuffle={shuffle} tail={tail}",
                  flush=True)
        for case, spec in enumerate(grid_during_the_build()):
            job = f"building-{case}"
            create_job(shardctl, daemon.address, job, spec)
            more, failed = check_streams(shardctl, daemon.address, job, spec,
                                         [0], plan_epoch=None)
            cases, failures = cases + more, failures + failed
            print(f"ok during the build: N={spec[0]} W={spec[1]} "
                  f"tail={spec[4]}", flush=True)
    print(f"{cases - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
