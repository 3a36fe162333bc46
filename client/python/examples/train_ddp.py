#!/usr/bin/python3
"""DistributedDataParallel training whose processes know only the
coordinator's address and a job id.

Start N copies (any machines, any order, no MASTER_ADDR/MASTER_PORT):

    python3 train_ddp.py --coordinator shardd:7070 --job demo \\
        --world-size 3 --checkpoint-dir /shared/ckpt

or let torchrun start them (docs/user-guide.md "torchrun"): the sampler then asks for
torchrun's RANK, takes WORLD_SIZE as the world size and LOCAL_RANK for its
member id, and torchrun --max_restarts restarts the world after a crash.

Each process joins the job (the first creates it), forms its process group
through the coordinator (Gloo on CPU, NCCL when CUDA is available), trains
on exactly its DistributedSampler shard of every epoch, checkpoints and
commits its position every --checkpoint-every steps, evaluates on uneven
shards (every held-out sample once) with gather_uneven, and after a crash
resumes from the committed position with the matching checkpoint.
--record FILE appends "epoch rank index" for every sample as its step
begins (tests; "{member}" and "{restart}" in FILE become the member id and
torchrun's restart count).
"""
import argparse
import glob
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import TensorDataset

import shard.torch


def synthetic(size, seed):
    """(x, y, index) with y = x . w + noise: a linear model can learn it."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(size, 16, generator=generator)
    w = torch.arange(16, dtype=torch.float32) / 16
    y = x @ w + 0.01 * torch.randn(size, generator=generator)
    return TensorDataset(x, y.unsqueeze(1), torch.arange(size))


def checkpoint_path(directory, epoch, position):
    return os.path.join(directory, f"ckpt-{epoch}-{position}.pt")


def save_checkpoint(directory, model, optimizer, epoch, position):
    """Atomically: temporary file, fsync, rename."""
    path = checkpoint_path(directory, epoch, position)
    partial = path + ".partial"
    with open(partial, "wb") as f:
        torch.save({"model": model.state_dict(),
                    "optimizer": optimizer.state_dict()}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(partial, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coordinator", required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--world-size", type=int, default=None,
                        help="creates the job with this size (default: the "
                        "job must exist, or WORLD_SIZE)")
    parser.add_argument("--member", default=None)
    parser.add_argument("--dataset-size", type=int, default=3000)
    parser.add_argument("--eval-size", type=int, default=301)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=10)
    parser.add_argument("--checkpoint-every", type=int, default=20,
                        help="steps between checkpoint + commit")
    parser.add_argument("--loader-workers", type=int, default=2,
                        help="DataLoader worker processes")
    parser.add_argument("--checkpoint-dir", required=True)
    parser.add_argument("--record", default=None)
    args = parser.parse_args()
    os.makedirs(args.checkpoint_dir, exist_ok=True)

    train = synthetic(args.dataset_size, seed=1)
    held_out = synthetic(args.eval_size, seed=2)
    sampler = shard.torch.DistributedShardSampler(
        train, coordinator=args.coordinator, job=args.job,
        member=args.member, num_replicas=args.world_size, seed=7)
    # Gloo on CPU, NCCL with CUDA; re-joins if the world re-forms meanwhile.
    shard.torch.init_process_group(sampler)
    rank = sampler.rank
    print(f"rank {rank} of {sampler.num_replicas}: member "
          f"{sampler.membership.member_id} (RANK={os.environ.get('RANK', '-')})",
          flush=True)
    device = torch.device("cpu")
    if torch.cuda.is_available():
        device = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(device)

    torch.manual_seed(0)  # The same initial model on every rank.
    model = torch.nn.Linear(16, 1).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    start = (sampler.epoch, sampler.position)
    if start != (0, 0):
        state = torch.load(checkpoint_path(args.checkpoint_dir, *start),
                           map_location=device)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        print(f"rank {rank}: resuming epoch {start[0]} at position "
              f"{start[1]}", flush=True)
    ddp = DistributedDataParallel(model)
    # shard.torch.DataLoader: sampler.position counts the batches this loop
    # received, also with worker processes prefetching ahead of it.
    loader = shard.torch.DataLoader(train, batch_size=args.batch_size,
                                    sampler=sampler,
                                    num_workers=args.loader_workers)
    record = None
    if args.record:
        record = open(args.record.format(
            member=sampler.membership.member_id,
            restart=os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")), "a")

    for epoch in range(sampler.epoch, args.epochs):
        sampler.set_epoch(epoch)  # Optional: a finished pass advances it.
        steps = 0
        for x, y, indices in loader:
            if record:
                # Before the step: a process killed during it has recorded
                # every sample of a step another rank may commit.
                record.writelines(f"{epoch} {rank} {int(i)}\n"
                                  for i in indices)
                record.flush()
            loss = torch.nn.functional.mse_loss(ddp(x.to(device)),
                                                y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            steps += 1
            if steps % args.checkpoint_every == 0:
                position = sampler.position
                if rank == 0:
                    save_checkpoint(args.checkpoint_dir, model, optimizer,
                                    epoch, position)
                    sampler.commit(epoch, position)
                dist.barrier()
        # The epoch is complete: checkpoint and commit its end (the
        # coordinator records it as the next epoch's start).
        if rank == 0:
            save_checkpoint(args.checkpoint_dir, model, optimizer, epoch + 1,
                            0)
            sampler.commit(epoch, sampler.position)
            for old in glob.glob(os.path.join(args.checkpoint_dir,
                                              f"ckpt-{epoch}-*.pt")):
                os.remove(old)
        dist.barrier()
        print(f"rank {rank}: epoch {epoch} loss {loss.item():.4f}",
              flush=True)

    # Uneven evaluation: every held-out sample exactly once across ranks.
    evaluator = shard.torch.DistributedEvalSampler(
        held_out, coordinator=sampler.client, job=f"{args.job}-eval",
        member=sampler.membership.member_id, num_replicas=sampler.num_replicas,
        shuffle=False)
    errors = []
    with torch.no_grad():
        for index in evaluator:
            x, y, _ = held_out[index]
            errors.append(float((model(x.to(device)) - y.to(device)) ** 2))
    gathered = shard.torch.gather_uneven(torch.tensor(errors, device=device))
    total = torch.cat(gathered)
    checksum = sum(float(p.double().sum()) for p in model.parameters())
    print(f"rank {rank}: eval samples {total.numel()} mse "
          f"{total.mean().item():.6f} params {checksum:.10f}", flush=True)
    evaluator.close()
    # DDP first, while its process group is still registered: torch 1.13
    # frees a Gloo group with the GIL held when a DDP reducer drops the
    # last reference to it, and hangs if a thread of the group still has a
    # tensor to free (see docs/user-guide.md, "Ending a DDP script").
    del ddp
    dist.destroy_process_group()
    sampler.close()


if __name__ == "__main__":
    main()
