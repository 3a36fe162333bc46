#!/usr/bin/python3
"""Fashion-MNIST as a mixture: each class a source, re-weighted.

    python3 mixture_fashion_mnist.py --coordinator shardd:7070 --job fmnist \\
        --weight shirt=3 --weight pullover=2 --epoch-size 12000 --epochs 2

Each of the 10 classes of the training set is a source (the ConcatDataset
of the classes, in class order, is the dataset); a class weighs 1 unless
--weight NAME=W says otherwise, and every epoch takes exactly its share of
--epoch-size images from each class (docs/mixtures.md). A softmax
regression trains on them through shard.torch.DataLoader; after every
epoch the script prints, for each class, the images the coordinator plans
per epoch (Job.source_counts) and those the training loop received (the
figure as the trainer sees it), and the accuracy on the 10,000 test
images. Start --world-size copies (or let torchrun start them) for a
multi-process job: each prints its own rank's counts (the ranks' add up
to the plan; with more than one rank, padding may repeat a few images) and
trains its own copy of the model (train_ddp.py shows
DistributedDataParallel).
"""
import argparse
import gzip
import os

import numpy
import torch
from torch.utils.data import ConcatDataset, TensorDataset

import shard
import shard.torch

CLASSES = ["tshirt", "trouser", "pullover", "dress", "coat", "sandal",
           "shirt", "sneaker", "bag", "boot"]


def read_idx(path):
    """An idx file (gzipped or not) as a numpy array."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
             for i in range(dims)]
    return numpy.frombuffer(data, numpy.uint8, offset=4 + 4 * dims).reshape(
        shape)


def load(directory, split):
    """(images as float tensors in [0, 1], labels) of "train" or "t10k"."""
    images = read_idx(os.path.join(directory, f"{split}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(directory, f"{split}-labels-idx1-ubyte.gz"))
    return (torch.from_numpy(images.astype(numpy.float32) / 255.0),
            torch.from_numpy(labels.astype(numpy.int64)))


def class_sources(images, labels):
    """The ConcatDataset of the classes, in class order."""
    return ConcatDataset([TensorDataset(images[labels == c],
                                        labels[labels == c])
                          for c in range(len(CLASSES))])


def parse_weights(given):
    weights = {name: 1.0 for name in CLASSES}
    for text in given:
        name, _, value = text.partition("=")
        if name not in weights:
            raise SystemExit(f"--weight {text}: the classes are "
                             f"{', '.join(CLASSES)}")
        weights[name] = float(value)
    return weights


def accuracy(model, images, labels):
    with torch.no_grad():
        predicted = model(images.view(len(images), -1)).argmax(dim=1)
    return (predicted == labels).float().mean().item()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coordinator", required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--world-size", type=int, default=1)
    parser.add_argument("--weight", action="append", default=[],
                        metavar="CLASS=W")
    parser.add_argument("--epoch-size", type=int, default=12000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--data-dir",
                        default="/usr/share/datasets/fashion-mnist")
    args = parser.parse_args()
    weights = parse_weights(args.weight)
    images, labels = load(args.data_dir, "train")
    dataset = class_sources(images, labels)
    sampler = shard.torch.DistributedMixtureSampler(
        dataset, sources=[shard.source(name, weight=weights[name])
                          for name in CLASSES],
        epoch_size=args.epoch_size, coordinator=args.coordinator,
        job=args.job, num_replicas=args.world_size)
    loader = shard.torch.DataLoader(dataset, batch_size=128, sampler=sampler,
                                    num_workers=2)
    # What the coordinator takes from each class every epoch.
    planned = list(sampler.client.get_job(args.job).source_counts)
    test_images, test_labels = load(args.data_dir, "t10k")
    model = torch.nn.Linear(28 * 28, len(CLASSES))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        received = torch.zeros(len(CLASSES), dtype=torch.int64)
        for batch, target in loader:
            loss = torch.nn.functional.cross_entropy(
                model(batch.view(len(batch), -1)), target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            received += torch.bincount(target, minlength=len(CLASSES))
        sampler.commit()
        print(f"epoch {epoch} rank {sampler.rank}: test accuracy "
              f"{accuracy(model, test_images, test_labels):.3f}")
        for c, name in enumerate(CLASSES):
            print(f"  {name:8} weight {weights[name]:<4g} planned "
                  f"{planned[c]:5d} received {int(received[c]):5d}",
                  flush=True)
    sampler.close()


if __name__ == "__main__":
    main()
