#!/usr/bin/python3
"""A torchrun training script written for torch's DistributedSampler, with
only the user guide's two-line migration: DistributedSampler ->
shard.torch.DistributedShardSampler, DataLoader -> shard.torch.DataLoader.

It is shaped like pytorch/examples' minGPT-ddp trainer: it calls
dist.init_process_group itself (torchrun's env:// rendezvous), reads batches
through a DataLoader with worker processes, calls set_epoch each epoch,
saves a snapshot ({"epochs_run"}) after each epoch and, when restarted,
continues from the snapshot's epoch. It never commits to the coordinator.

--record FILE appends "epoch rank index" for every trained sample
("{restart}" and "{rank}" in FILE become torchrun's restart count and
RANK).
"""
import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import TensorDataset

import shard.torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coordinator", required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--dataset-size", type=int, default=4000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--snapshot", required=True)
    parser.add_argument("--record", required=True)
    args = parser.parse_args()

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    size = args.dataset_size
    dataset = TensorDataset(torch.arange(size, dtype=torch.float32)
                            .unsqueeze(1) / size, torch.arange(size))
    sampler = shard.torch.DistributedShardSampler(
        dataset, coordinator=args.coordinator, job=args.job, seed=7)
    loader = shard.torch.DataLoader(dataset, batch_size=10, sampler=sampler,
                                    num_workers=2)
    model = DistributedDataParallel(torch.nn.Linear(1, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    epochs_run = 0
    if os.path.exists(args.snapshot):
        epochs_run = torch.load(args.snapshot)["epochs_run"]
        print(f"rank {rank}: resuming from snapshot at epoch {epochs_run}",
              flush=True)
    record = open(args.record.format(
        restart=os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"),
        rank=rank), "a")
    for epoch in range(epochs_run, args.epochs):
        sampler.set_epoch(epoch)
        for x, indices in loader:
            loss = model(x).pow(2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            record.writelines(f"{epoch} {rank} {int(i)}\n" for i in indices)
            record.flush()
        if rank == 0:
            torch.save({"epochs_run": epoch + 1}, args.snapshot + ".partial")
            os.replace(args.snapshot + ".partial", args.snapshot)
        print(f"rank {rank}: epoch {epoch} done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
