#!/usr/bin/python3
"""Balanced batches over a mixture, end to end: a mixture with balanced
batches (sources "short" twice per epoch and 300 chosen of "long", each
with its own costs) served to two DistributedBatchSamplers over the
ConcatDataset: each rank gets the reference's micro-batches over the
mixture's order (batch_plan_reference over mixture_reference's chosen
samples, shuffled), every chosen sample as often as the epoch chose it;
costs not given one sequence per source raise ValueError. shardctl
create-job and plan take the costs one file per source (the job names the
costs the sampler uploaded; files in the wrong order are refused naming
the source), and describe shows the balance of the epoch streamed as plan
--balance computes it. Exit status 0 when every check passes.
"""
import os
import subprocess
import sys

from harness import (ShardDaemon, check, exit_code,  # noqa: E402
                     expect_error, join_all, parse_args)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "conformance"))
import batch_plan_reference as reference  # noqa: E402
import mixture_reference  # noqa: E402

SEED = 11
TOKENS = 2048


def check_mixture(args, address):
    """A mixture with balanced batches (sources "short" twice per epoch
    and 300 chosen of "long", each with its own costs): two
    DistributedBatchSamplers over the ConcatDataset serve two epochs, each
    rank the reference's micro-batches over the mixture's order, every
    chosen sample as often as the epoch chose it."""
    import numpy as np
    import shard
    import shard.torch
    import torch
    from torch.utils.data import ConcatDataset
    rng = np.random.default_rng(5)
    short = np.clip(np.rint(rng.lognormal(4, 1, 500)), 8, 256).astype(int)
    long = np.clip(np.rint(rng.lognormal(6, 1, 700)), 64, 2048).astype(int)
    dataset = ConcatDataset([range(500), range(700)])
    samplers = join_all(lambda i: shard.torch.DistributedBatchSampler(
        dataset, costs=[short, long], batch_tokens=TOKENS, batch_window=400,
        sources=[shard.source("short", repeat=2),
                 shard.source("long", choose=300)],
        coordinator=address, job="mixture", member=f"x{i}",
        num_replicas=2, seed=SEED), 2)
    samplers.sort(key=lambda s: s.rank)
    triples = [("short", 500, "repeat", 2), ("long", 700, "choose", 300)]
    values = [int(c) for c in np.concatenate([short, long])]
    for epoch in range(2):
        chosen = mixture_reference.chosen(
            triples, mixture_reference.counts(triples), SEED, epoch)
        order = [chosen[p] for p in torch.randperm(
            len(chosen),
            generator=torch.Generator().manual_seed(SEED + epoch)).tolist()]
        plan = reference.plan(values, 2, batch_tokens=TOKENS, window=400,
                              seed=SEED, epoch=epoch, order=order)
        got = [[batch for batch in sampler] for sampler in samplers]
        check(all(got[r] == [step[r] for step in plan] for r in range(2)),
              f"mixture epoch {epoch}: each rank's {len(got[0])} "
              f"micro-batches are the reference's {len(plan)} steps")
        served = sorted(i for rank in got for batch in rank for i in batch)
        check(served == sorted(chosen),
              f"mixture epoch {epoch}: {len(served)} samples served, each "
              f"as often as the epoch chose it")
        if epoch == 0:
            first_epoch = got[0]
    for sampler in samplers:
        sampler.close()
    check_shardctl_mixture(args, address, short, long, first_epoch)
    expect_error("a mixture's costs not one sequence per source", ValueError,
                 lambda: shard.torch.DistributedBatchSampler(
                     dataset, costs=values, batch_tokens=TOKENS,
                     sources=[shard.source("short"), shard.source("long")],
                     coordinator=address, job="mixture-bad",
                     num_replicas=1))


def check_shardctl_mixture(args, address, short, long, rank0_epoch0):
    """shardctl create-job and plan take a mixture's costs one file per
    source: the job names the costs the Python sampler uploaded, plan
    prints rank 0's micro-batches of epoch 0, and files in the wrong order
    are refused naming the source."""
    import tempfile
    import numpy as np
    import shard
    shardctl = os.path.join(args.bin_dir, "shardctl")
    with tempfile.TemporaryDirectory() as work:
        files = [os.path.join(work, name) for name in ("s.npy", "l.npy")]
        np.save(files[0], short.astype(np.uint16))
        np.save(files[1], long.astype(np.uint16))
        common = [shardctl, "--coordinator", address]
        mixture = ["--source", "short:500:repeat=2", "--source",
                   "long:700:choose=300", "--world-size", "2", "--seed",
                   str(SEED), "--batch-tokens", str(TOKENS),
                   "--batch-window", "400"]
        created = subprocess.run(
            common + ["create-job", "--job", "mixture-ctl", *mixture,
                      "--costs", files[0], "--costs", files[1]],
            capture_output=True, text=True, timeout=60)
        with shard.Client(address) as client:
            digests = [client.get_job(job).spec.batches.costs_sha256
                       for job in ("mixture", "mixture-ctl")]
        check(created.returncode == 0 and digests[0] == digests[1],
              f"shardctl create-job --costs per source names the costs the "
              f"sampler uploaded ({created.stderr.strip()[-200:]})")
        swapped = subprocess.run(
            common + ["create-job", "--job", "mixture-swapped", *mixture,
                      "--costs", files[1], "--costs", files[0]],
            capture_output=True, text=True, timeout=60)
        check(swapped.returncode != 0 and
              "holds 700 costs but source short has 500 samples" in
              swapped.stderr, f"a source's costs of another count are "
              f"refused: {swapped.stderr.strip()}")
        plan = subprocess.run(
            common + ["plan", "--job", "mixture", "--epoch", "0", "--rank",
                      "0", "--costs", files[0], "--costs", files[1]],
            capture_output=True, text=True, timeout=60)
        planned = [[int(i) for i in line.split(":")[1].split()]
                   for line in plan.stdout.splitlines()]
        check(plan.returncode == 0 and planned == rank0_epoch0,
              f"shardctl plan --costs per source prints rank 0's "
              f"{len(planned)} micro-batches of the mixture "
              f"({plan.stderr.strip()[-200:]})")
        balance = subprocess.run(
            common + ["plan", "--job", "mixture", "--epoch", "1", "--rank",
                      "0", "--costs", files[0], "--costs", files[1],
                      "--balance"], capture_output=True, text=True,
            timeout=60).stdout.splitlines()
        described = subprocess.run(
            common + ["describe", "--job", "mixture"], capture_output=True,
            text=True, timeout=60).stdout.splitlines()
        # The steps line, then the imbalance, padding and fill lines.
        check(len(balance) == 4 and
              all(line in described for line in balance[1:]) and any(
                  line.startswith("balance of epoch 1 as streamed (" +
                                  balance[0].split()[2] + " steps")
                  for line in described),
              f"describe shows the balance plan --balance computes for the "
              f"epoch streamed: {balance[1:]}")


def main():
    args = parse_args(__doc__)
    with ShardDaemon(args.bin_dir) as daemon:
        check_mixture(args, daemon.address)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
