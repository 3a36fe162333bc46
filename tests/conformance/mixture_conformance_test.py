#!/usr/bin/python3
"""Conformance of mixtures: shardd + shardctl give exactly the indices of
the independent reference of docs/mixtures.md (mixture_reference.py, with
python3-torch's DistributedSampler for the shuffle, tail and split).

Starts the real shardd, and for a grid of mixtures (1..5 sources, co-prime
sizes up to 10^6, weights summing to non-integers, fractional repeats,
choose), tails and world sizes 1, 3, 8 creates the job with `shardctl
create-job --source ...`, checks the per-source counts it prints, streams
epochs 0..2 with W `shardctl consume` processes and previews epoch 7 (later
passes of each source's walk) with `shardctl plan`, and rank 0's count per
source with `shardctl plan --by-source`.
Exit status 0 when every case matches; each mismatch is printed.
"""
import argparse
import itertools
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from conformance_test import consume_all, run  # noqa: E402
from shardd_process import ShardDaemon  # noqa: E402
import mixture_reference as reference  # noqa: E402

# (sources, epoch_size): a source is (name, size, kind, value).
MIXTURES = [
    ([("only", 1009, None, None)], 0),
    ([("a", 7, "weight", 0.3), ("b", 11, "weight", 0.45),
      ("c", 13, "weight", 1.7)], 100),
    ([("small", 101, "repeat", 2.5), ("large", 997, "repeat", 0.35)], 0),
    ([("x", 1000003, "choose", 3001), ("y", 17, None, None),
      ("z", 5, "repeat", 0.5)], 0),
    ([("s1", 3, "weight", 1.0), ("s2", 5, "weight", 2.25),
      ("s3", 7, "weight", 0.125), ("s4", 11, "weight", 3.0),
      ("s5", 13, "weight", 0.5)], 1001),
    ([("p", 29, "choose", 30), ("q", 31, "repeat", 0.1),
      ("r", 37, "choose", 1), ("s", 41, None, None), ("t", 43, "repeat", 1.5)],
     0),
]
SEED = 1234
LATE_EPOCH = 7


def source_flag(source):
    name, size, kind, value = source
    return f"{name}:{size}" + (f":{kind}={value}" if kind else "")


def create_job(shardctl, address, job, sources, epoch_size, w, tail,
               shuffle):
    cmd = [shardctl, "--coordinator", address, "create-job", "--job", job,
           "--world-size", str(w), "--seed", str(SEED), "--tail", tail,
           "--shuffle", str(shuffle).lower()]
    for source in sources:
        cmd += ["--source", source_flag(source)]
    if epoch_size:
        cmd += ["--epoch-size", str(epoch_size)]
    printed = {}
    for line in run(cmd).stdout.splitlines():
        if line.startswith("source "):
            name, rest = line[len("source "):].split(": ")
            printed[name] = int(rest.split("per_epoch=")[1])
    return printed


def per_source(indices, sources):
    """{name: how many of `indices` fall in the source}."""
    counts, start = {}, 0
    for name, size, _, _ in sources:
        counts[name] = sum(start <= i < start + size for i in indices)
        start += size
    return counts


def planned_by_source(shardctl, address, job, epoch, rank):
    out = run([shardctl, "--coordinator", address, "plan", "--job", job,
               "--epoch", str(epoch), "--rank", str(rank), "--by-source"])
    return {line[len("source "):].split(": ")[0]: int(line.split(": ")[1])
            for line in out.stdout.splitlines()}


def check_case(shardctl, address, job, mixture, w, tail, shuffle):
    sources, epoch_size = mixture
    per_epoch = reference.counts(sources, epoch_size)
    printed = create_job(shardctl, address, job, sources, epoch_size, w, tail,
                         shuffle)
    failures = 0
    if printed != {s[0]: n for s, n in zip(sources, per_epoch)}:
        failures += 1
        print(f"MISMATCH counts {job}: printed {printed}, expected "
              f"{per_epoch}")
    streamed = consume_all(shardctl, address, job, w, 3)
    cases = 1
    for epoch, rank in itertools.product([0, 1, 2, LATE_EPOCH], range(w)):
        expected = reference.rank_indices(
            reference.chosen(sources, per_epoch, SEED, epoch), w, rank, SEED,
            epoch, shuffle, tail)
        if epoch == LATE_EPOCH:
            got = [int(x) for x in run(
                [shardctl, "--coordinator", address, "plan", "--job", job,
                 "--epoch", str(epoch), "--rank", str(rank)]).stdout.split()]
        else:
            got = streamed.get((epoch, rank), [])
        cases += 1
        if got != expected:
            failures += 1
            print(f"MISMATCH {job} epoch={epoch} rank={rank}\n"
                  f"  expected {expected[:20]}\n  got      {got[:20]}")
        if epoch == LATE_EPOCH and rank == 0:
            cases += 1
            counted = planned_by_source(shardctl, address, job, epoch, rank)
            if counted != per_source(expected, sources):
                failures += 1
                print(f"MISMATCH {job} plan --by-source: {counted}, "
                      f"expected {per_source(expected, sources)}")
    return cases, failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    args = parser.parse_args()
    shardctl = f"{args.bin_dir}/shardctl"
    cases = failures = 0
    with ShardDaemon(args.bin_dir) as daemon:
        grid = itertools.product(enumerate(MIXTURES), [1, 3, 8],
                                 ["pad", "drop", "uneven"])
        for (m, mixture), w, tail in grid:
            for shuffle in [True, False] if w == 3 else [True]:
                job = f"mix-{m}-w{w}-{tail}-{'s' if shuffle else 'n'}"
                more, failed = check_case(shardctl, daemon.address, job,
                                          mixture, w, tail, shuffle)
                cases, failures = cases + more, failures + failed
                print(f"{'ok' if not failed else 'FAILED'} {job}", flush=True)
    print(f"{cases - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
