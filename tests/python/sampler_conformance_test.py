#!/usr/bin/python3
"""The Python DistributedShardSampler over a real shardd yields exactly
torch's DistributedSampler indices.

For a grid of (N, W, seed, shuffle, drop_last), N < W included, W samplers
(threads of this process, one member each) join a job, and for epochs 0-2
every rank's indices and len() must equal DistributedSampler's (half of the
cases call set_epoch, the others rely on iter() advancing the epoch).
DistributedEvalSampler must give order[r::W] (every sample once) and commit
an epoch to its end from every rank whatever N % W, a
state_dict taken mid-epoch must resume with exactly the remaining indices,
and commit() must be recorded by the coordinator.
Exit status 0 when every check passes.
"""
import functools
import itertools
import sys

from harness import ShardDaemon, exit_code, join_all, parse_args  # noqa: E402,E501
from harness import check as _check  # noqa: E402

# 1,600 checks: print only the failures.
check = functools.partial(_check, quiet=True)


def grid():
    sizes_worlds = [(1, 1), (3, 5), (7, 8), (10, 3), (12, 4), (100, 7),
                    (4099, 16), (50000, 6)]
    for (n, w), seed, drop_last in itertools.product(
            sizes_worlds, [0, 1234, 2**63 - 1], [False, True]):
        for shuffle in ([True, False] if seed == 0 else [True]):
            yield n, w, seed, shuffle, drop_last


def join_world(make, world):
    """Samplers made at once (each join waits for the world), by rank."""
    return sorted(join_all(make, world), key=lambda s: s.rank)


def main():
    args = parse_args(__doc__.splitlines()[0])
    import shard  # noqa: E402
    import shard.torch  # noqa: E402
    import torch  # noqa: E402
    from torch.utils.data.distributed import DistributedSampler  # noqa: E402

    cases = 0
    with ShardDaemon(args.bin_dir) as daemon:
        client = shard.Client(daemon.address)
        for case, (n, w, seed, shuffle, drop_last) in enumerate(grid()):
            cases += 1
            job = f"case-{case}"
            samplers = join_world(
                lambda i: shard.torch.DistributedShardSampler(
                    range(n), coordinator=client, job=job, member=f"m{i}",
                    num_replicas=w, shuffle=shuffle, seed=seed,
                    drop_last=drop_last), w)
            name = (f"N={n} W={w} seed={seed} shuffle={shuffle} "
                    f"drop_last={drop_last}")
            for sampler in samplers:
                ref = DistributedSampler(range(n), num_replicas=w,
                                         rank=sampler.rank, shuffle=shuffle,
                                         seed=seed, drop_last=drop_last)
                check(len(sampler) == len(ref), f"{name}: len")
                for epoch in range(3):
                    if case % 2:
                        sampler.set_epoch(epoch)
                    ref.set_epoch(epoch)
                    got = list(sampler)
                    check(got == list(ref),
                          f"{name} rank {sampler.rank} epoch {epoch}: "
                          f"{got[:8]} != {list(ref)[:8]}")
                sampler.close(leave=False)

        # Evaluation: order[r::W], every sample exactly once.
        n, w, seed = 4099, 16, 7
        evals = join_world(lambda i: shard.torch.DistributedEvalSampler(
            range(n), coordinator=client, job="eval", member=f"e{i}",
            num_replicas=w, seed=seed), w)
        generator = torch.Generator()
        generator.manual_seed(seed)
        order = torch.randperm(n, generator=generator).tolist()
        seen = []
        for sampler in evals:
            got = list(sampler)
            check(got == order[sampler.rank::w] and len(sampler) == len(got),
                  f"eval rank {sampler.rank}")
            seen += got
            sampler.close(leave=False)
        check(sorted(seen) == list(range(n)), "eval covers 0..N-1 once")

        # Evaluation epochs commit to their end from every rank, whatever
        # N % W (ranks hold ceil or floor of N / W samples).
        for n in (12, 13, 15, 10, 3):
            w = 4
            evals = join_world(lambda i: shard.torch.DistributedEvalSampler(
                range(n), coordinator=client, job=f"eval-commit-{n}",
                member=f"c{i}", num_replicas=w, seed=seed), w)
            for sampler in evals:
                iterator = iter(sampler)
                first = next(iterator, None)
                mid = sampler.position
                check(first is None or mid == w,
                      f"eval N={n} rank {sampler.rank}: position {mid} "
                      f"after one sample")
                got = []
                if first is not None:  # Else the rank's epoch is over.
                    iterator.close()
                    got = list(sampler)
                check(sampler.position == n and
                      sampler.commit() == (1, 0),
                      f"eval N={n} rank {sampler.rank}: after its "
                      f"{len(got)} samples the position is {n} and the "
                      f"commit completes the epoch")
                sampler.close(leave=False)

        # Mid-epoch state_dict: the resumed iterator yields the rest.
        n, w = 1000, 4
        resumable = join_world(lambda i: shard.torch.DistributedShardSampler(
            range(n), coordinator=client, job="resume", member=f"r{i}",
            num_replicas=w, seed=3), w)
        sampler = resumable[1]
        ref = DistributedSampler(range(n), num_replicas=w, rank=1, seed=3)
        ref.set_epoch(0)
        expected = list(ref)
        iterator = iter(sampler)
        head = [next(iterator) for _ in range(37)]
        state = sampler.state_dict()
        iterator.close()
        check(head == expected[:37] and state == {"epoch": 0,
                                                  "position": 37 * w},
              f"state after 37 indices: {state}")
        sampler.load_state_dict(state)
        check(list(sampler) == expected[37:], "resume yields the remainder")
        committed = sampler.commit(0, 37 * w)
        job = client.get_job("resume")
        check(committed == (0, 148) and job.committed_position == 148,
              f"commit recorded: {committed}")
        for s in resumable:
            s.close()

    return exit_code(f"{cases} cases; checks: ")


if __name__ == "__main__":
    sys.exit(main())
