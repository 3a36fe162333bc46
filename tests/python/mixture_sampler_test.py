#!/usr/bin/python3
"""shard.torch.DistributedMixtureSampler over a ConcatDataset, through
shard.torch.DataLoader with worker processes.

Two ranks, each in its own process, build the sampler over a ConcatDataset
of three parts (sample i of the dataset is the tensor [i]) with weighted
sources and an epoch size, and train 3 epochs with 2 DataLoader workers:
every epoch of every rank equals the independent reference of
docs/mixtures.md (tests/conformance/mixture_reference.py), len(sampler) is
the rank's share of the epoch size. Wrong arguments (not a ConcatDataset,
a size unlike its part's, two shares) raise ValueError, and so does a
sampler joining an existing job (no num_replicas) that is not its
dataset's: sources in another order, a plain sampler and a mixture job, a
plain job of another size (one over the job's dataset joins it). The worked
example (client/python/examples/mixture_fashion_mnist.py, each
Fashion-MNIST class a source, two re-weighted) trains 2 epochs: each class's images the loop
received equal the coordinator's plan and the reference's counts.
Exit status 0 when every check passes.
"""
import json
import os
import subprocess
import sys

from harness import ShardDaemon, check, exit_code, parse_args  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "conformance"))
import mixture_reference as reference  # noqa: E402

PARTS = [("web", 500, 1.0), ("books", 37, 2.5), ("curated", 5, 0.25)]
EPOCH_SIZE = 301
SEED = 5
WORLD = 2
EPOCHS = 3


class Part:
    """Samples offset..offset+size-1 of the concatenation, as tensors."""

    def __init__(self, offset, size):
        self.offset, self.size = offset, size

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        import torch
        return torch.tensor([self.offset + index])


def concat_dataset():
    from torch.utils.data import ConcatDataset
    parts, offset = [], 0
    for _, size, _ in PARTS:
        parts.append(Part(offset, size))
        offset += size
    return ConcatDataset(parts)


def sources():
    import shard
    return [shard.source(name, weight=weight) for name, _, weight in PARTS]


def child(address, member):
    """One rank: prints {"rank", "len", "epochs"} as one JSON line."""
    import shard.torch
    dataset = concat_dataset()
    sampler = shard.torch.DistributedMixtureSampler(
        dataset, sources=sources(), epoch_size=EPOCH_SIZE,
        coordinator=address, job="mixture", member=member,
        num_replicas=WORLD, seed=SEED)
    loader = shard.torch.DataLoader(dataset, batch_size=16, sampler=sampler,
                                    num_workers=2)
    epochs = []
    for _ in range(EPOCHS):
        epochs.append([i for batch in loader for i in batch.view(-1).tolist()])
    print(json.dumps({"rank": sampler.rank, "len": len(sampler),
                      "epochs": epochs}), flush=True)
    sampler.close(leave=False)


def expected(rank, epoch):
    triples = [(name, size, "weight", weight) for name, size, weight in PARTS]
    counts = reference.counts(triples, EPOCH_SIZE)
    return reference.rank_indices(
        reference.chosen(triples, counts, SEED, epoch), WORLD, rank, SEED,
        epoch, True, "pad")


def check_joins_without_spec(address):
    """A sampler joining an existing job (no num_replicas) is refused, with
    ValueError before it waits, unless the job is its dataset's."""
    import shard
    import shard.torch
    from torch.utils.data import ConcatDataset
    client = shard.Client(address)
    client.create_job("plain", shard.job_spec(100, 1))
    client.create_job("mixture-1", shard.job_spec(
        0, 1, epoch_size=EPOCH_SIZE,
        sources=[shard.source(name, size, weight=weight)
                 for name, size, weight in PARTS]))
    reordered = ConcatDataset(list(reversed(concat_dataset().datasets)))
    reordered_sources = list(reversed(sources()))
    for what, make in [
            ("a mixture sampler whose parts are in another order",
             lambda: shard.torch.DistributedMixtureSampler(
                 reordered, sources=reordered_sources, epoch_size=EPOCH_SIZE,
                 coordinator=address, job="mixture-1", member="late")),
            ("a plain sampler joining the mixture job",
             lambda: shard.torch.DistributedShardSampler(
                 concat_dataset(), coordinator=address, job="mixture-1",
                 member="late")),
            ("a plain sampler over 50 samples joining a job of 100",
             lambda: shard.torch.DistributedShardSampler(
                 range(50), coordinator=address, job="plain", member="late")),
            ("a mixture sampler joining a plain job",
             lambda: shard.torch.DistributedMixtureSampler(
                 concat_dataset(), sources=sources(), coordinator=address,
                 job="plain", member="late"))]:
        try:
            make()
            check(False, f"{what} raises ValueError")
        except ValueError as error:
            check(True, f"{what} raises ValueError: {error}")
        except shard.ShardError as error:
            check(False, f"{what} raises ValueError, not {error!r}")
    for job in ("plain", "mixture-1"):
        check(client.get_job(job).generation == 0,
              f"no refused sampler joined {job} (it formed no world)")
    sampler = shard.torch.DistributedShardSampler(
        range(100), coordinator=address, job="plain", member="fits")
    check(len(sampler) == 100, "a sampler over the job's dataset joins it")
    sampler.close()


def check_wrong_arguments(address):
    import shard
    import shard.torch
    for what, make in [
            ("not a ConcatDataset", lambda: shard.torch.DistributedMixtureSampler(
                Part(0, 10), sources=sources(), epoch_size=5,
                coordinator=address, job="wrong", num_replicas=1)),
            ("a size unlike its part's", lambda: shard.torch.DistributedMixtureSampler(
                concat_dataset(),
                sources=[shard.source("web", 499, weight=1), *sources()[1:]],
                epoch_size=5, coordinator=address, job="wrong",
                num_replicas=1)),
            ("two shares", lambda: shard.source("x", weight=1, repeat=2))]:
        try:
            make()
            check(False, f"{what} raises ValueError")
        except ValueError as error:
            check(True, f"{what} raises ValueError: {error}")


EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                       "..", "client", "python", "examples",
                       "mixture_fashion_mnist.py")
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def check_fashion_mnist_example(args, address):
    """The worked example of docs/mixtures.md: every class's images the
    training loop received equal what the coordinator planned, and those
    equal the reference's counts (W = 1: no padding)."""
    if not os.path.isdir(FASHION_MNIST):
        print(f"skipped the example: no {FASHION_MNIST}")
        return
    env = dict(os.environ, PYTHONPATH=args.python_dir)
    out = subprocess.run(
        [sys.executable, EXAMPLE, "--coordinator", address, "--job",
         "fmnist", "--weight", "shirt=3", "--weight", "pullover=2",
         "--epoch-size", "3000", "--epochs", "2"],
        capture_output=True, text=True, env=env, timeout=600)
    check(out.returncode == 0,
          f"the example exits 0 ({out.stderr.strip()[-500:]})")
    rows = [line.split() for line in out.stdout.splitlines()
            if line.startswith("  ")]
    weights = {"shirt": 3.0, "pullover": 2.0}
    classes = ["tshirt", "trouser", "pullover", "dress", "coat", "sandal",
               "shirt", "sneaker", "bag", "boot"]
    reference_counts = reference.counts(
        [(name, 6000, "weight", weights.get(name, 1.0)) for name in classes],
        3000)
    check(len(rows) == 2 * len(classes), f"{len(rows)} class rows printed")
    for row in rows:
        name, planned, received = row[0], int(row[4]), int(row[6])
        check(planned == received == reference_counts[classes.index(name)],
              f"{name}: planned {planned}, received {received}, reference "
              f"{reference_counts[classes.index(name)]}")


def main():
    args = parse_args(__doc__, lambda p: p.add_argument("--child", nargs=2))
    if args.child:
        child(*args.child)
        return 0
    with ShardDaemon(args.bin_dir) as daemon:
        env = dict(os.environ, PYTHONPATH=args.python_dir)
        ranks = [subprocess.Popen(
            [sys.executable, __file__, "--bin-dir", args.bin_dir,
             "--python-dir", args.python_dir, "--child", daemon.address,
             f"m{r}"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, env=env) for r in range(WORLD)]
        for process in ranks:
            out, err = process.communicate(timeout=300)
            lines = [line for line in out.splitlines() if line.startswith("{")]
            if not lines:
                check(False, f"a rank reported (exit {process.returncode}): "
                      f"{err[-2000:]}")
                continue
            report = json.loads(lines[-1])
            rank = report["rank"]
            check(report["len"] == len(expected(rank, 0)),
                  f"rank {rank}: len(sampler) {report['len']} is its share "
                  f"of the epoch")
            for epoch, got in enumerate(report["epochs"]):
                check(got == expected(rank, epoch),
                      f"rank {rank} epoch {epoch}: {len(got)} indices equal "
                      f"the reference's")
        check_wrong_arguments(daemon.address)
        check_joins_without_spec(daemon.address)
        check_fashion_mnist_example(args, daemon.address)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
