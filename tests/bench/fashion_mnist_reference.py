#!/usr/bin/python3
"""The reference side of run_fashion_mnist_parity.py: the same CNN and
hyper-parameters as `shard-train --dataset fashion-mnist --model cnn`,
trained with torch.nn.parallel.DistributedDataParallel and a local
DistributedSampler over Gloo (or, with --backend nccl, NCCL on the GPUs:
rank r on GPU r mod GPUs), W processes on this machine.

Prints one JSON line per epoch on rank 0 ({"epoch", "seconds", "samples"})
and a final one ({"accuracy"}) evaluated on the test set (the first
--eval-size samples; --train-size likewise for training).

  fashion_mnist_reference.py --world-size 2 --epochs 3 --batch-size 64
      --lr 0.02 [--backend gloo] [--data-path /usr/share/datasets/fashion-mnist]
"""
import argparse
import gzip
import json
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def read_idx(path):
    data = gzip.open(path).read()
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
            for i in range(data[3])]
    return np.frombuffer(data, np.uint8,
                         offset=4 + 4 * len(dims)).reshape(dims)


def load(path, stem, size):
    """The first `size` samples of the idx files `stem`."""
    images = read_idx(f"{path}/{stem}-images-idx3-ubyte.gz")[:size]
    labels = read_idx(f"{path}/{stem}-labels-idx1-ubyte.gz")[:size]
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)
    return TensorDataset(x, torch.from_numpy(labels.astype(np.int64)))


def cnn():
    """trainer/models.cc's cnn for 1x28x28 images and 10 classes."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


def worker(rank, args, port):
    torch.set_num_threads(args.threads)
    dist.init_process_group(args.backend,
                            init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=args.world_size)
    device = torch.device("cpu")
    if args.backend == "nccl":
        device = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(device)
    train = load(args.data_path, "train", args.train_size)
    test = load(args.data_path, "t10k", args.eval_size)
    torch.manual_seed(1000 + rank)
    model = nn.parallel.DistributedDataParallel(cnn().to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    sampler = DistributedSampler(train, num_replicas=args.world_size,
                                 rank=rank, shuffle=True, seed=0)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        began = time.monotonic()
        samples = 0
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
            samples += len(y)
        seconds = time.monotonic() - began
        if rank == 0:
            print(json.dumps({"epoch": epoch, "seconds": seconds,
                              "samples": samples * args.world_size}),
                  flush=True)
    if rank == 0:
        with torch.no_grad():
            x, y = (t.to(device) for t in test.tensors)
            correct = (model.module(x).argmax(1) == y).sum().item()
        print(json.dumps({"accuracy": correct / len(y)}), flush=True)
    dist.barrier()
    del model  # Before the group: docs/user-guide.md, "Ending a DDP script".
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--train-size", type=int, default=60000)
    parser.add_argument("--eval-size", type=int, default=10000)
    parser.add_argument("--backend", default="gloo",
                        choices=["gloo", "nccl"])
    parser.add_argument("--data-path",
                        default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    port = 20000 + os.getpid() % 20000
    mp.spawn(worker, args=(args, port), nprocs=args.world_size)


if __name__ == "__main__":
    main()
