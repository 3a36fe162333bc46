#!/usr/bin/python3
"""Balanced batches end to end: shard.torch.DistributedBatchSampler under
shard.torch.DataLoader with worker processes, against the independent
reference of docs/balanced-batches.md, exactly once across a mid-epoch
resume and a coordinator killed and restarted.

Two ranks, each in its own process, create the job from their costs
(lognormal lengths; the upload is shared by digest) with a token budget and
train 2 epochs, then 3 steps of epoch 2, commit and exit. The coordinator
is killed (SIGKILL) and restarted on its data directory; two new processes
resume epoch 2. Checks: every epoch of every rank equals the reference
over the job's torch order (so each step's micro-batches cost nearly the
same, every rank has the same number of steps and every sample is served
once); epoch 2's first 3 steps plus what the resumed processes trained is
the whole epoch, nothing twice. Refusals: costs of another length, both or
neither of the budgets, a job whose costs were not uploaded
(FAILED_PRECONDITION), costs that do not match their digest (DATA_LOSS),
the uneven tail with balanced batches (INVALID_ARGUMENT), costs for more
than 2^32 samples and a job of 2^32 + 1 samples with balanced batches
(INVALID_ARGUMENT), a cost of 2^32
(ValueError), a stream that starts inside a step (INVALID_ARGUMENT), a
plain sampler joining a job with balanced batches, the reverse, and a batch
sampler whose costs are not the job's (ValueError);
micro-batches split across chunks arrive whole. Costs uploaded just
before the restart, not yet named by a job, are removed by it: a sampler
that uploaded them uploads again. shardctl plan --costs prints the
micro-batches streamed, with their costs, and --balance the figures.
shardctl create-job
--costs reads a .npy and a raw u32 file, and shardctl consume (the C++
client) prints the micro-batches the Python client streams.
With --replicated the same two phases run on a replicated coordinator (3
etcd members, 3 replicas, leader lease 2 s) and the leader is killed
between them instead: the costs are kept in etcd, and the new leader serves
epoch 2's rest from them, exactly once (--check-etcd then reports them).
A batch sampler with max_replicas creates an elastic job
(mixtures: balanced_mixture_test.py). An elastic job is
resized mid-epoch (4 ranks, then 2, the coordinator restarted between):
each world gets the reference's micro-batches and the epoch is served
once. Two budgets (packed sequences with attention_length): each rank
streams the reference's micro-batches, none over the token budget, and
shardctl describe shows d and the fill.
Exit status 0 when every check passes.
"""
import json
import os
import subprocess
import sys

from harness import (ShardDaemon, check, exit_code,  # noqa: E402
                     expect_error, join_all, parse_args)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "conformance"))
import batch_plan_reference as reference  # noqa: E402

N = 3000
WORLD = 2
SEED = 11
TOKENS = 2048
WINDOW = 1000  # three windows and a short last one
STEPS_BEFORE_KILL = 3
RESIZE_STEPS = 5


def costs():
    import numpy as np
    rng = np.random.default_rng(3)
    return np.clip(np.rint(rng.lognormal(5, 1, N)), 16, 1024).astype(np.int64)


def expected(epoch):
    import torch
    order = torch.randperm(
        N, generator=torch.Generator().manual_seed(SEED + epoch)).tolist()
    return reference.plan([int(c) for c in costs()], WORLD,
                          batch_tokens=TOKENS, window=WINDOW, seed=SEED,
                          epoch=epoch, order=order)


def sampler(address, member):
    import shard.torch
    return shard.torch.DistributedBatchSampler(
        range(N), costs=costs(), batch_tokens=TOKENS, batch_window=WINDOW,
        coordinator=address, job="balanced", member=member,
        num_replicas=WORLD, seed=SEED)


def child(address, member, phase, context):
    """One rank: prints {"rank", "epochs": [[batch, ...], ...], "position"};
    its loader's workers start by `context` (a multiprocessing start
    method)."""
    import shard.torch
    batches = sampler(address, member)
    loader = shard.torch.DataLoader(range(N), batch_sampler=batches,
                                    num_workers=2,
                                    multiprocessing_context=context)
    epochs = []
    if phase == "first":
        for _ in range(2):
            epochs.append([batch.tolist() for batch in loader])
        partial = []
        for batch in loader:
            partial.append(batch.tolist())
            if len(partial) == STEPS_BEFORE_KILL:
                break
        batches.commit()
        epochs.append(partial)
    else:
        epochs.append([batch.tolist() for batch in loader])
    print(json.dumps({"rank": batches.rank, "epochs": epochs,
                      "epoch": batches.epoch, "position": batches.position}),
          flush=True)
    batches.close(leave=False)


def run_ranks(args, address, phase, context=None):
    """The ranks of `phase`; their workers start by `context`, by default
    fork where that works (shard._compat), else forkserver."""
    from shard import _compat
    if context is None:
        context = "forkserver" if _compat.FORK_HANGS_WITH_GRPC else "fork"
    env = dict(os.environ, PYTHONPATH=args.python_dir)
    ranks = [subprocess.Popen(
        [sys.executable, __file__, "--bin-dir", args.bin_dir, "--python-dir",
         args.python_dir, "--child", address, f"m{r}", phase, context],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for r in range(WORLD)]
    reports = {}
    for process in ranks:
        out, err = process.communicate(timeout=300)
        lines = [line for line in out.splitlines() if line.startswith("{")]
        check(bool(lines), f"{phase}: a rank reported (exit "
              f"{process.returncode}) {err.strip()[-1500:]}")
        if lines:
            report = json.loads(lines[-1])
            reports[report["rank"]] = report
    return reports


def check_training(first, resumed):
    for epoch in range(2):
        plan = expected(epoch)
        for rank in range(WORLD):
            got = first.get(rank, {}).get("epochs", [[]] * 3)[epoch]
            check(got == [step[rank] for step in plan],
                  f"epoch {epoch} rank {rank}: {len(got)} micro-batches "
                  f"equal the reference's {len(plan)} steps")
    plan = expected(2)
    served = []
    for rank in range(WORLD):
        before = first.get(rank, {}).get("epochs", [[]] * 3)[2]
        after = resumed.get(rank, {}).get("epochs", [[]])[0]
        check(before + after == [step[rank] for step in plan],
              f"epoch 2 rank {rank}: {len(before)} steps before the kill and "
              f"{len(after)} after the restart are the reference's epoch")
        served += [i for batch in before + after for i in batch]
    check(sorted(served) == list(range(N)),
          f"epoch 2: {len(served)} samples served, each once")


def joined(client, job, members):
    """Joins `members` at once (each join waits for the world), by rank."""
    return sorted(join_all(lambda i: client.join(
        job, members[i], progress=None, wait=60), len(members)),
        key=lambda m: m.rank)


def check_resize(daemon):
    """An elastic job with balanced batches (world 4, at least 2): 4 ranks
    serve RESIZE_STEPS steps of epoch 1 and commit, 2 leave, the other 2
    form a world of 2 from the committed step's end; the coordinator is
    killed and restarted; the 2 serve the rest. Each world's micro-batches
    are the reference's (the rest re-batched for 2), the epoch once."""
    import shard
    import torch
    client = shard.Client(daemon.address)
    digest = client.put_costs(costs())
    client.create_job("resized", shard.job_spec(
        N, 4, min_world_size=2, max_world_size=4, seed=SEED,
        batch_tokens=TOKENS, batch_window=WINDOW, costs_sha256=digest))
    four = joined(client, "resized", [f"e{r}" for r in range(4)])
    before = []
    for member in four:
        steps = client.stream_batches(member, 1)
        before.append([next(steps) for _ in range(RESIZE_STEPS)])
        steps.close()
    base = before[0][-1][1]
    client.commit(four[0], 1, base)
    for member in four[2:]:
        client.leave(member)
    two = joined(client, "resized", [m.member_id for m in four[:2]])
    check([m.world_size for m in two] == [2, 2] and
          two[0].committed_position == base,
          f"the 2 left form a world of 2 from position {base}")
    daemon.kill()
    daemon.restart()
    client = shard.Client(daemon.address)
    after = [list(client.stream_batches(m, 1, base)) for m in two]
    values = [int(c) for c in costs()]
    order = torch.randperm(
        N, generator=torch.Generator().manual_seed(SEED + 1)).tolist()
    params = dict(batch_tokens=TOKENS, window=WINDOW, seed=SEED, epoch=1,
                  order=order)
    first = reference.plan(values, 4, **params)[:RESIZE_STEPS]
    rest = reference.plan(values, 4, resizes=[(base, 2)], **params)
    for rank, steps in enumerate(before):
        check([b.tolist() for b, _ in steps] == [s[rank] for s in first],
              f"resize: rank {rank} of 4 got the reference's "
              f"{RESIZE_STEPS} steps")
    for rank, steps in enumerate(after):
        check([b.tolist() for b, _ in steps] == [s[rank] for s in rest],
              f"resize: rank {rank} of 2 got the reference's {len(rest)} "
              f"steps of the rest, after a restart")
    served = sorted(i for steps in before + after for b, _ in steps
                    for i in b.tolist())
    # The pad tail makes the 2's rest a multiple of 2: one repeat at most.
    check(sorted(set(served)) == list(range(N)) and
          0 <= len(served) - N < 2,
          f"resize 4 -> 2: {len(served)} samples served, every one of {N} "
          f"once (and at most 1 again, the world of 2's pad tail)")
    client.close()


def check_elastic_sampler(address):
    """A DistributedBatchSampler with min_replicas / max_replicas creates
    an elastic job (its world forms with num_replicas) and serves it."""
    import shard
    import shard.torch
    values = [5 + i % 7 for i in range(60)]
    batches = shard.torch.DistributedBatchSampler(
        range(60), costs=values, batch_tokens=40, coordinator=address,
        job="elastic", member="e", num_replicas=1, max_replicas=3)
    spec = batches.client.get_job("elastic").spec
    served = sorted(i for batch in batches for i in batch)
    batches.close()
    check((spec.min_world_size, spec.max_world_size) == (1, 3) and
          served == list(range(60)),
          f"a batch sampler with max_replicas=3 creates an elastic job "
          f"(min {spec.min_world_size}, max {spec.max_world_size}) and "
          f"serves its {len(served)} samples")
    expect_error("min_replicas above num_replicas", ValueError,
                 lambda: shard.torch.DistributedBatchSampler(
                     range(60), costs=values, batch_tokens=40,
                     coordinator=address, job="elastic-bad", member="e",
                     num_replicas=2, min_replicas=3))


def check_refusals(address):
    import numpy as np
    import shard
    import shard.torch
    from shard import errors
    from shard.v1 import shard_pb2 as pb
    client = shard.Client(address)
    expect_error("costs of another length", ValueError,
                 lambda: shard.torch.DistributedBatchSampler(
                     range(10), costs=[1] * 9, batch_tokens=5,
                     coordinator=client, job="x", num_replicas=1))
    expect_error("both budgets", ValueError,
                 lambda: shard.torch.DistributedBatchSampler(
                     range(10), costs=[1] * 10, batch_tokens=5, batch_size=2,
                     coordinator=client, job="x", num_replicas=1))
    missing = "0" * 64
    expect_error("a job whose costs were not uploaded",
                 errors.FailedPreconditionError,
                 lambda: client.create_job("x", shard.job_spec(
                     10, 1, batch_tokens=5, costs_sha256=missing)))
    expect_error("costs that do not match their digest", errors.DataLossError,
                 lambda: client._call("PutCosts", pb.PutCostsRequest(
                     sha256=missing, count=2,
                     costs_le32=np.array([1, 2], "<u4").tobytes())))
    expect_error("costs for more than 2^32 samples", errors.InvalidArgumentError,
                 lambda: client._call("PutCosts", pb.PutCostsRequest(
                     sha256=missing, count=2**32 + 1,
                     costs_le32=np.array([1], "<u4").tobytes())))
    expect_error("a cost of 2^32", ValueError,
                 lambda: client.put_costs([2**32]))
    digest = client.put_costs([5] * 10)
    expect_error("balanced batches over 2^32 + 1 samples",
                 errors.InvalidArgumentError,
                 lambda: client.create_job("x", shard.job_spec(
                     2**32 + 1, 1, batch_tokens=5, costs_sha256=digest)))
    expect_error("balanced batches with the uneven tail",
                 errors.InvalidArgumentError,
                 lambda: client.create_job("x", shard.job_spec(
                     10, 2, tail="uneven", batch_tokens=5,
                     costs_sha256=digest)))
    client.create_job("inside", shard.job_spec(
        10, 1, batch_tokens=10, costs_sha256=digest))
    expect_error("a DistributedShardSampler joining a job with balanced "
                 "batches", ValueError,
                 lambda: shard.torch.DistributedShardSampler(
                     range(10), coordinator=client, job="inside",
                     member="plain"))
    client.create_job("plain", shard.job_spec(10, 1))
    expect_error("a DistributedBatchSampler joining a plain job", ValueError,
                 lambda: shard.torch.DistributedBatchSampler(
                     range(10), costs=[5] * 10, batch_tokens=10,
                     coordinator=client, job="plain", member="batched"))
    expect_error("a DistributedBatchSampler with other costs joining a job",
                 ValueError,
                 lambda: shard.torch.DistributedBatchSampler(
                     range(10), costs=[6] * 10, batch_tokens=10,
                     coordinator=client, job="inside", member="other"),
                 "every rank and every launch must give the same costs")
    member = client.join("inside", "solo")
    steps = list(client.stream_batches(member, 0))
    check([len(b) for b, _ in steps] == [2] * 5 and
          [end for _, end in steps] == [2, 4, 6, 8, 10],
          f"one rank, 10 samples of cost 5, budget 10: five micro-batches "
          f"of 2 ending at 2, 4, .. 10 (got {[(len(b), e) for b, e in steps]})")
    split = [(b.tolist(), e) for b, e in
             client.stream_batches(member, 0, chunk_indices=3)]
    check(split == [(b.tolist(), e) for b, e in steps],
          "chunks of 3 indices (micro-batches split across chunks) give the "
          "same micro-batches")
    expect_error("a stream that starts inside a step",
                 errors.InvalidArgumentError,
                 lambda: list(client.stream_batches(member, 0, 1)))
    client.leave(member)


def check_upload_again(address, digest, values):
    """Costs uploaded before a restart whose job was not created yet are
    removed by the restart; a DistributedBatchSampler that uploaded them
    just before uploads them again and joins."""
    import shard.torch

    class UploadedBeforeTheRestart(shard.torch.DistributedBatchSampler):
        def _job_spec(self, num_replicas):
            self._costs_sha256 = digest  # As if put_costs ran before it.
            return super()._job_spec(num_replicas)
    try:
        batches = UploadedBeforeTheRestart(
            range(len(values)), costs=values, batch_tokens=64,
            coordinator=address, job="uploaded-before", member="solo",
            num_replicas=1)
        served = sorted(i for batch in batches for i in batch)
        batches.close()
        check(served == list(range(len(values))),
              "a sampler whose upload a restart removed uploads again and "
              "serves its epoch")
    except Exception as error:  # noqa: BLE001 (reported)
        check(False, f"a sampler whose upload a restart removed: {error}")


def check_shardctl_plan(shardctl, address, values, npy, other):
    """shardctl plan --costs computes the micro-batches the coordinator
    streams, with their costs (padded: count x longest); --balance prints
    the figures; costs other than the job's are refused."""
    import shard
    client = shard.Client(address)
    member = client.join("npy", "planned")
    streamed = [(batch.tolist(), end)
                for batch, end in client.stream_batches(member, 0)]
    client.leave(member)
    expected = [f"{end} {len(batch) * max(values[i] for i in batch)}: " +
                " ".join(str(i) for i in batch) for batch, end in streamed]
    plan = subprocess.run(
        [shardctl, "--coordinator", address, "plan", "--job", "npy",
         "--epoch", "0", "--rank", "0", "--costs", npy],
        capture_output=True, text=True, timeout=60)
    check(plan.returncode == 0 and plan.stdout.splitlines() == expected,
          f"shardctl plan --costs prints the {len(expected)} micro-batches "
          f"the coordinator streams with their costs "
          f"({plan.stdout.splitlines()[:2]} {plan.stderr.strip()[-300:]})")
    balance = subprocess.run(
        [shardctl, "--coordinator", address, "plan", "--job", "npy",
         "--epoch", "0", "--rank", "0", "--costs", npy, "--balance"],
        capture_output=True, text=True, timeout=60)
    check(balance.returncode == 0 and
          f"{len(expected)} steps of 1 micro-batches" in balance.stdout and
          "p50 1.000" in balance.stdout and "padding" in balance.stdout,
          f"shardctl plan --balance prints the figures: {balance.stdout}")
    with open(other, "wb") as f:
        f.write(bytes(4 * len(values)))  # Costs of 0: not the job's.
    refused = subprocess.run(
        [shardctl, "--coordinator", address, "plan", "--job", "npy",
         "--epoch", "0", "--rank", "0", "--costs", other, "--costs-format",
         "u32"], capture_output=True, text=True, timeout=60)
    check(refused.returncode != 0 and "other costs than the job's" in
          refused.stderr, f"costs other than the job's are refused: "
          f"{refused.stderr.strip()}")


def check_fork_refused(address):
    """Where forking a process that uses gRPC hangs, shard.torch.DataLoader
    refuses workers started by fork, naming what to use instead."""
    import shard.torch
    from shard import _compat
    if not _compat.FORK_HANGS_WITH_GRPC:
        return
    batches = shard.torch.DistributedBatchSampler(
        range(N), costs=costs(), batch_tokens=TOKENS, coordinator=address,
        job="fork-check", member="solo", num_replicas=1, rank=0)
    expect_error("a DataLoader forking workers where fork hangs", ValueError,
                 lambda: shard.torch.DataLoader(
                     range(N), batch_sampler=batches, num_workers=2,
                     multiprocessing_context="fork"))
    batches.close()


def check_npy_shapes(shardctl, address, work):
    """A .npy costs file that is not a 1-D array of its shape's length (a
    2 x 20 array, a 0-d scalar, a truncated file) is refused naming the
    file and what is wrong, before anything is uploaded."""
    import numpy as np
    np.save(os.path.join(work, "two_d.npy"),
            np.ones((2, 20), dtype=np.uint16))
    np.save(os.path.join(work, "scalar.npy"), np.uint16(5))
    np.save(os.path.join(work, "whole.npy"), np.ones(40, dtype=np.uint16))
    with open(os.path.join(work, "whole.npy"), "rb") as whole:
        data = whole.read()
    with open(os.path.join(work, "truncated.npy"), "wb") as truncated:
        truncated.write(data[:-6])
    for name, why in [("two_d.npy", "shape (2, 20)"),
                      ("scalar.npy", "shape ()"),
                      ("truncated.npy", "truncated")]:
        path = os.path.join(work, name)
        created = subprocess.run(
            [shardctl, "--coordinator", address, "create-job", "--job",
             "shape", "--size", "40", "--world-size", "1", "--costs", path,
             "--batch-tokens", "12"], capture_output=True, text=True)
        check(created.returncode == 2 and path in created.stderr and
              why in created.stderr,
              f"a costs file with {why} is refused naming it: "
              f"{created.stderr.strip()[-200:]}")


def check_shardctl(args, address):
    """shardctl create-job --costs reads .npy (u2) and raw u32 files and
    consume prints the micro-batches the Python client streams."""
    import tempfile
    import numpy as np
    import shard
    shardctl = os.path.join(args.bin_dir, "shardctl")
    values = (np.arange(40) % 7 + 1).astype(np.uint16)
    with tempfile.TemporaryDirectory() as work:
        np.save(os.path.join(work, "costs.npy"), values)
        values.astype("<u4").tofile(os.path.join(work, "costs.u32"))
        for job, name, extra in [("npy", "costs.npy", []),
                                 ("raw", "costs.u32",
                                  ["--costs-format", "u32"])]:
            created = subprocess.run(
                [shardctl, "--coordinator", address, "create-job", "--job",
                 job, "--size", "40", "--world-size", "1", "--costs",
                 os.path.join(work, name), "--batch-tokens", "12", *extra],
                capture_output=True, text=True)
            check(created.returncode == 0 and "batch_tokens=12" in
                  created.stdout, f"shardctl create-job --costs {name}: "
                  f"{created.stdout.strip()} {created.stderr.strip()}")
        raw = subprocess.run(
            [shardctl, "--coordinator", address, "create-job", "--job", "x",
             "--size", "40", "--world-size", "1", "--costs",
             os.path.join(work, "costs.u32"), "--batch-tokens", "12"],
            capture_output=True, text=True)
        check(raw.returncode == 2 and "--costs-format" in raw.stderr,
              f"a raw file without --costs-format exits 2 naming it: "
              f"{raw.stderr.strip()}")
        check_npy_shapes(shardctl, address, work)
        check_shardctl_plan(shardctl, address, values,
                            os.path.join(work, "costs.npy"),
                            os.path.join(work, "costs.u32"))
    consumed = subprocess.run(
        [shardctl, "--coordinator", address, "consume", "--job", "npy",
         "--member", "solo"], capture_output=True, text=True, timeout=60)
    client = shard.Client(address)
    left = client.get_job("npy").joined_members
    check(left == 0, f"shardctl consume leaves the job once done "
          f"({left} members left)")
    member = client.join("npy", "solo")
    expected = [f"0 0 {end}: " + " ".join(str(i) for i in batch.tolist())
                for batch, end in client.stream_batches(member, 0)]
    client.leave(member)
    check(consumed.returncode == 0 and
          consumed.stdout.splitlines() == expected,
          f"shardctl consume prints the {len(expected)} micro-batches the "
          f"Python client streams ({consumed.stderr.strip()[-300:]})")


def check_two_budgets(args, address):
    """Two budgets through the Python client and shardctl: the costs are
    lengths, batch_tokens caps each micro-batch's tokens and the steps are
    balanced by L + L^2 / d; each rank streams exactly the reference's
    micro-batches, describe shows d and the fill, and a sampler refuses d
    without packed sequences."""
    import numpy as np
    import torch
    import shard
    import shard.torch
    lengths = [int(c) for c in costs()]
    d = 128
    client = shard.Client(address)
    digest = client.put_costs(lengths)
    client.create_job("timed", shard.job_spec(
        N, WORLD, seed=SEED, batch_tokens=TOKENS, cost_model="sum",
        batch_window=WINDOW, attention_length=d, costs_sha256=digest))
    members = joined(client, "timed", ["t0", "t1"])
    streamed = [[batch.tolist() for batch, _ in
                 client.stream_batches(member, 0)] for member in members]
    order = torch.randperm(
        N, generator=torch.Generator().manual_seed(SEED)).tolist()
    planned = reference.plan(lengths, WORLD, batch_tokens=TOKENS,
                             cost_model="sum", window=WINDOW, seed=SEED,
                             order=order, attention_length=d)
    check(streamed == [[step[r] for step in planned] for r in range(WORLD)],
          f"with attention_length each rank streams the reference's "
          f"{len(planned)} micro-batches")
    over = [b for rank in streamed for b in rank
            if len(b) > 1 and sum(lengths[i] for i in b) > TOKENS]
    check(not over, f"no micro-batch holds more than {TOKENS} tokens "
          f"({len(over)} do)")
    figures = reference.balance_figures(
        lengths, planned, "sum", TOKENS, d)
    for member in members:
        client.leave(member)
    described = subprocess.run(
        [os.path.join(args.bin_dir, "shardctl"), "--coordinator", address,
         "describe", "--job", "timed"], capture_output=True, text=True,
        timeout=60)
    check(described.returncode == 0 and
          f"attention_length={d}" in described.stdout and
          f"fill (real tokens over world size x batch_tokens): "
          f"{100 * figures['fill']:.2f}%" in described.stdout,
          f"shardctl describe shows d and the fill "
          f"({100 * figures['fill']:.2f}%): {described.stdout.strip()}")
    # describe names the window and its rule: given, or by the costs' mean.
    given = reference.window_samples(WORLD, 0, WINDOW)
    client.create_job("by-mean", shard.job_spec(
        N, WORLD, batch_tokens=TOKENS, cost_model="sum", costs_sha256=digest,
        costs_total=shard.costs_total(lengths)))
    by_mean = reference.window_samples(WORLD, 0, 0, TOKENS, sum(lengths), N)
    windows = [subprocess.run(
        [os.path.join(args.bin_dir, "shardctl"), "--coordinator", address,
         "describe", "--job", job], capture_output=True, text=True,
        timeout=60).stdout for job in ("timed", "by-mean")]
    check(f"{given} samples at W={WORLD} (given)" in windows[0] and
          f"{by_mean} samples at W={WORLD} (the default: 256 steps at the "
          f"costs' mean)" in windows[1],
          f"describe shows each job's window ({given} given, {by_mean} by "
          f"the mean): {windows}")
    try:
        shard.torch.DistributedBatchSampler(
            range(N), costs=costs(), batch_tokens=TOKENS,
            attention_length=d, coordinator=address, job="padded-timed",
            num_replicas=1)
        check(False, "attention_length with the padded model is refused")
    except ValueError as error:
        check("cost_model='sum'" in str(error),
              f"attention_length with the padded model is refused: {error}")
    client.close()


def across_failover(args):
    """The two phases on replicas, the leader killed between them."""
    import tempfile
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "e2e"))
    from replicated_coordinator import EtcdCluster, Replicas
    # Workers forked while a channel reconnects to the killed replica can
    # crash (SIGSEGV): gRPC is not fork-safe. docs/python.md gives this
    # start method for replicated coordinators.
    context = "forkserver"
    with tempfile.TemporaryDirectory() as work, EtcdCluster() as etcd, \
            Replicas(args.bin_dir, etcd, work) as replicas:
        check(replicas.leader(deadline_s=60) is not None, "a replica leads")
        first = run_ranks(args, replicas.coordinator, "first", context)
        leader = replicas.leader()
        replicas.kill(leader)
        check(replicas.leader(deadline_s=60, skip=(leader,)) is not None,
              "another replica leads after the kill")
        resumed = run_ranks(args, replicas.coordinator, "resumed", context)
        check_training(first, resumed)
        checked = subprocess.run(
            [os.path.join(args.bin_dir, "shardd"), "--check-etcd",
             "--etcd-endpoints", etcd.endpoints],
            capture_output=True, text=True)
        check(checked.returncode == 0 and
              f"costs (balanced batches) in etcd: 1 sets, {4 * N} bytes" in
              checked.stdout and "1 of 1 sets the jobs name are sound" in
              checked.stdout,
              f"--check-etcd reports the costs: {checked.stdout.strip()}")


def main():
    args = parse_args(__doc__, lambda p: (
        p.add_argument("--child", nargs=4),
        p.add_argument("--replicated", action="store_true")))
    if args.child:
        child(*args.child)
        return 0
    if args.replicated:
        across_failover(args)
        return exit_code()
    with ShardDaemon(args.bin_dir) as daemon:
        first = run_ranks(args, daemon.address, "first")
        check(all(r["epoch"] == 2 for r in first.values()),
              "the first processes stop in epoch 2")
        import shard
        values = [7 + i % 5 for i in range(40)]
        with shard.Client(daemon.address) as uploader:
            digest = uploader.put_costs(values)  # No job names them yet.
        daemon.kill()
        daemon.restart()
        check_upload_again(daemon.address, digest, values)
        resumed = run_ranks(args, daemon.address, "resumed")
        check_training(first, resumed)
        check_refusals(daemon.address)
        check_fork_refused(daemon.address)
        check_shardctl(args, daemon.address)
        check_elastic_sampler(daemon.address)
        check_two_budgets(args, daemon.address)
        check_resize(daemon)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
