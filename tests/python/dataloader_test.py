#!/usr/bin/python3
"""shard.torch.DataLoader with worker processes: exact resume points, and
the epoch rule of DistributedSampler under real multi-process runs.

1. For num_workers 0, 2 and 4 (prefetch_factor 2, and 3 with 4 workers): a
   trainer process takes 5 batches of 32, checks that sampler.state_dict(),
   loader.state_dict() and the commit say 160 (not the 288/416 indices its
   workers prefetched), then kills itself (SIGKILL, workers and all). A new
   process resumes under the same member id and trains the rest of the
   epoch: the two together trained exactly DistributedSampler's epoch,
   each index once, in order.
2. A plain torch DataLoader with workers warns (once) that the sampler
   cannot count consumed samples, naming shard.torch.DataLoader; with
   num_workers=0 it does not.
3. The pattern of PyTorch's DDP tutorial (multigpu_torchrun.py): peek a
   batch with next(iter(loader)) before each epoch's loop, with and without
   set_epoch, with 0 and 2 workers, and the same with the bare sampler; two
   ranks in two processes. Every pass equals DistributedSampler's epoch 0,
   1, 2 and the peeked batch is the epoch's first.
Exit status 0 when every check passes.
"""
import json
import os
import signal
import subprocess
import sys
import warnings

from harness import ShardDaemon, check, exit_code, parse_args  # noqa: E402

N = 1000
BATCH = 32


class IndexDataset:
    """Sample i is the tensor [i]: a batch shows which indices it holds."""

    def __init__(self, size):
        self.size = size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        import torch
        return torch.tensor([index])


def batch_indices(batch):
    return batch.view(-1).tolist()


def trainer(role, address, job, workers, prefetch, world, member):
    """Runs in a child process; prints one JSON line for the parent."""
    import shard.torch
    sampler = shard.torch.DistributedShardSampler(
        IndexDataset(101 if role.startswith("tutorial") else N), coordinator=address,
        job=job, member=member, num_replicas=world, seed=7)
    options = {"num_workers": workers}
    if workers:
        options["prefetch_factor"] = prefetch
    if role == "first":
        loader = shard.torch.DataLoader(sampler_dataset(sampler),
                                        batch_size=BATCH, sampler=sampler,
                                        **options)
        trained = []
        for step, batch in enumerate(loader):
            trained += batch_indices(batch)
            if step == 4:
                break
        report = {"trained": trained, "state": sampler.state_dict(),
                  "loader_state": loader.state_dict(),
                  "committed": list(sampler.commit())}
        print(json.dumps(report), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    if role == "resume":
        loader = shard.torch.DataLoader(sampler_dataset(sampler),
                                        batch_size=BATCH, sampler=sampler,
                                        **options)
        start = sampler.state_dict()
        trained = [i for batch in loader for i in batch_indices(batch)]
        print(json.dumps({"start": start, "trained": trained,
                          "after": sampler.state_dict()}), flush=True)
        sampler.close()
        return
    # role == "tutorial*": peek, then the epoch's loop, three epochs.
    use_set_epoch = role.endswith("set-epoch")
    bare = "bare" in role
    source = sampler if bare else shard.torch.DataLoader(
        sampler_dataset(sampler), batch_size=8, sampler=sampler, **options)
    passes = []
    for epoch in range(3):
        if use_set_epoch:
            sampler.set_epoch(epoch)
        peek = next(iter(source))
        peek = [peek] if bare else batch_indices(peek)
        full = [i for item in source
                for i in ([item] if bare else batch_indices(item))]
        passes.append({"peek": peek, "pass": full})
    print(json.dumps({"rank": sampler.rank, "passes": passes}), flush=True)
    sampler.close(leave=False)


def sampler_dataset(sampler):
    return IndexDataset(sampler.dataset_size)


def run_child(args, *child_args, timeout=180):
    """Starts this file as a child trainer; returns its process."""
    env = dict(os.environ, PYTHONPATH=args.python_dir)
    return subprocess.Popen(
        [sys.executable, __file__, "--bin-dir", args.bin_dir, "--python-dir",
         args.python_dir, "--child", *child_args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def report_of(process, what, timeout=180):
    out, err = process.communicate(timeout=timeout)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if not lines:
        print(f"{what}: no report (exit {process.returncode}):\n{err[-3000:]}")
        return None
    return json.loads(lines[-1])


def reference(world, rank, epoch, size):
    from torch.utils.data.distributed import DistributedSampler
    ref = DistributedSampler(range(size), num_replicas=world, rank=rank,
                             seed=7)
    ref.set_epoch(epoch)
    return list(ref)


def resume_cases(args, address):
    for workers, prefetch in [(0, 2), (2, 2), (4, 2), (4, 3)]:
        job = f"resume-w{workers}-p{prefetch}"
        name = f"num_workers={workers} prefetch_factor={prefetch}"
        first = report_of(run_child(args, "first", address, job, str(workers),
                                    str(prefetch), "1", "m"), name)
        if first is None:
            check(False, f"{name}: the first process reported")
            continue
        consumed = 5 * BATCH
        check(first["state"] == {"epoch": 0, "position": consumed} and
              first["loader_state"] == first["state"] and
              first["committed"] == [0, consumed],
              f"{name}: after 5 batches state {first['state']}, loader "
              f"{first['loader_state']}, committed {first['committed']} "
              f"(expected position {consumed})")
        resumed = report_of(run_child(args, "resume", address, job,
                                      str(workers), str(prefetch), "1", "m"),
                            name)
        if resumed is None:
            check(False, f"{name}: the resumed process reported")
            continue
        expected = reference(1, 0, 0, N)
        union = first["trained"] + resumed["trained"]
        check(resumed["start"] == {"epoch": 0, "position": consumed},
              f"{name}: resumed at {resumed['start']}")
        check(union == expected,
              f"{name}: killed + resumed trained exactly the epoch once "
              f"({len(union)} samples, {len(set(union))} distinct, "
              f"{len(set(expected) - set(union))} missing)")
        check(resumed["after"] == {"epoch": 1, "position": 0},
              f"{name}: the finished pass moved to epoch 1: "
              f"{resumed['after']}")


def warning_cases(address):
    import torch.utils.data
    import shard.torch
    for workers in (2, 0):
        sampler = shard.torch.DistributedShardSampler(
            IndexDataset(N), coordinator=address, job=f"warn-{workers}",
            member="w", num_replicas=1, seed=7)
        loader = torch.utils.data.DataLoader(
            IndexDataset(N), batch_size=BATCH, sampler=sampler,
            num_workers=workers)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(2):  # Two passes: one warning.
                iterator = iter(loader)
                next(iterator)
                del iterator
        named = [w for w in caught if "shard.torch.DataLoader" in
                 str(w.message)]
        expected = 1 if workers else 0
        check(len(named) == expected,
              f"plain DataLoader num_workers={workers}: {len(named)} "
              f"warning(s) naming shard.torch.DataLoader, expected "
              f"{expected}")
        sampler.close()


def tutorial_cases(args, address):
    size = 101
    for role, workers in [("tutorial", 0), ("tutorial", 2),
                          ("tutorial-set-epoch", 2),
                          ("tutorial-bare", 0),
                          ("tutorial-bare-set-epoch", 0)]:
        job = f"{role}-w{workers}"
        children = [run_child(args, role, address, job, str(workers), "2",
                              "2", f"rank{i}") for i in range(2)]
        reports = [report_of(child, f"{role} rank {i}")
                   for i, child in enumerate(children)]
        for report in reports:
            if report is None:
                check(False, f"{job}: a rank reported")
                continue
            rank = report["rank"]
            for epoch, one in enumerate(report["passes"]):
                expected = reference(2, rank, epoch, size)
                head = expected[:1] if "bare" in role else expected[:8]
                check(one["pass"] == expected and one["peek"] == head,
                      f"{job} rank {rank} epoch {epoch}: pass equals "
                      f"DistributedSampler's (got {one['pass'][:6]}..., "
                      f"expected {expected[:6]}...; peek {one['peek'][:3]})")


def main():
    if "--child" in sys.argv:
        at = sys.argv.index("--child")
        sys.path.insert(0, sys.argv[sys.argv.index("--python-dir") + 1])
        role, address, job, workers, prefetch, world, member = \
            sys.argv[at + 1:at + 8]
        trainer(role, address, job, int(workers), int(prefetch), int(world),
                member)
        return 0
    args = parse_args(__doc__.splitlines()[0])
    with ShardDaemon(args.bin_dir) as daemon:
        resume_cases(args, daemon.address)
        warning_cases(daemon.address)
        tutorial_cases(args, daemon.address)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
