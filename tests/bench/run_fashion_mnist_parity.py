#!/usr/bin/python3
"""Parity benchmark on real data: the same CNN, hyper-parameters and sample
order trained (a) by shard-train through a real shardd and (b) by a
reference DistributedDataParallel script with a local DistributedSampler
(fashion_mnist_reference.py), W processes over --backend (Gloo on CPU,
NCCL on the GPUs) on this machine, one
after the other in this one run, for each W of --world-sizes. Prints
Markdown tables: samples/s per epoch (all ranks together) with their
ratio, the share of shard-train's epoch time spent waiting for indices from
the coordinator, and test accuracy. The reference runs with shard-train's
heap settings (see SAME_HEAP) unless --reference-default-heap.

  tests/bench/run_fashion_mnist_parity.py --bin-dir build/bin
      [--world-sizes 1,2] [--epochs 3] [--batch-size 64] [--lr 0.02]
      [--threads 1] [--backend gloo] [--reference-default-heap]
      [--data-path /usr/share/datasets/fashion-mnist]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from shardd_process import ShardDaemon  # noqa: E402


def run_shard_train(args, env):
    with ShardDaemon(args.bin_dir) as daemon, \
            tempfile.TemporaryDirectory() as work:
        procs = []
        for rank in range(args.world_size):
            out = open(os.path.join(work, f"rank{rank}.out"), "w+")
            cmd = [f"{args.bin_dir}/shard-train", "--coordinator",
                   daemon.address, "--job", "parity", "--member", f"m{rank}",
                   "--world-size", str(args.world_size), "--seed", "0",
                   "--dataset", "fashion-mnist", "--model", "cnn",
                   "--epochs", str(args.epochs),
                   "--batch-size", str(args.batch_size),
                   "--lr", str(args.lr), "--backend", args.backend,
                   "--gloo-interface", "lo", "--pg-timeout", "10m",
                   "--dataset-size", str(args.train_size),
                   "--eval-size", str(args.eval_size),
                   "--data-path", args.data_path]
            procs.append((subprocess.Popen(cmd, stdout=out,
                                           stderr=subprocess.STDOUT, env=env),
                          out))
        texts = []
        for proc, out in procs:
            proc.wait(timeout=7200)
            out.seek(0)
            texts.append(out.read())
            if proc.returncode != 0:
                sys.exit(f"shard-train exited {proc.returncode}:\n"
                         f"{texts[-1][-3000:]}")
    # Rank 0's epoch lines (a member's rank is the coordinator's choice).
    epochs = []
    for m in re.finditer(r"epoch (\d+) rank=0 steps=\d+ samples=(\d+) "
                         r".*seconds=([\d.]+) index_wait_s=([\d.]+)",
                         "\n".join(texts)):
        epochs.append({"samples": int(m.group(2)) * args.world_size,
                       "seconds": float(m.group(3)),
                       "index_wait": float(m.group(4))})
    accuracy = float(re.search(r"accuracy=([\d.]+)", texts[0]).group(1))
    return epochs, accuracy


# shard-train keeps freed tensor memory in its heap (trainer/heap_reuse.h);
# the reference gets the same glibc settings. Without them its speed
# depends on whether glibc's dynamic mmap threshold happened to rise early
# in the process: measured at W = 2, 5,800-7,600 samples/s in some runs and
# 1,600-1,750 in others, with every step faulting in fresh pages.
SAME_HEAP = "glibc.malloc.mmap_threshold=33554432:" \
            "glibc.malloc.trim_threshold=536870912"


def run_reference(args, env):
    if args.same_heap:
        env = dict(env, GLIBC_TUNABLES=SAME_HEAP)
    out = subprocess.run(
        [sys.executable, os.path.join(HERE, "fashion_mnist_reference.py"),
         "--world-size", str(args.world_size), "--epochs", str(args.epochs),
         "--batch-size", str(args.batch_size), "--lr", str(args.lr),
         "--threads", str(args.threads), "--train-size",
         str(args.train_size), "--eval-size", str(args.eval_size),
         "--backend", args.backend, "--data-path", args.data_path],
        check=True, capture_output=True, text=True, env=env, timeout=7200)
    lines = [json.loads(line) for line in out.stdout.splitlines()
             if line.startswith("{")]
    epochs = [line for line in lines if "epoch" in line]
    return epochs, lines[-1]["accuracy"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--world-sizes", default="1,2")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.02)
    parser.add_argument("--threads", type=int, default=1,
                        help="intra-op threads per process (OMP_NUM_THREADS)")
    parser.add_argument("--backend", default="gloo")
    parser.add_argument("--train-size", type=int, default=60000,
                        help="train on the first N samples (smoke runs)")
    parser.add_argument("--eval-size", type=int, default=10000,
                        help="evaluate on the first N test samples")
    parser.add_argument("--data-path",
                        default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--reference-default-heap", dest="same_heap",
                        action="store_false",
                        help="run the reference with glibc's default malloc "
                             "thresholds instead of shard-train's")
    args = parser.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    for world_size in (int(w) for w in args.world_sizes.split(",")):
        args.world_size = world_size
        compare(args, env)


def compare(args, env):
    print(f"shard-train: W={args.world_size}, {args.epochs} epochs ...",
          file=sys.stderr, flush=True)
    shard_epochs, shard_accuracy = run_shard_train(args, env)
    print("reference DDP + DistributedSampler ...", file=sys.stderr,
          flush=True)
    ref_epochs, ref_accuracy = run_reference(args, env)

    print(f"\nFashion-MNIST, CNN, W={args.world_size} ({args.backend}), "
          f"batch {args.batch_size}/rank, SGD lr {args.lr} momentum 0.9, "
          f"{args.threads} thread(s)/process, reference heap: "
          f"{'as shard-train' if args.same_heap else 'glibc default'}\n")
    print("| epoch | shard-train samples/s | reference samples/s | ratio | "
          "shard-train index wait |")
    print("| --- | --- | --- | --- | --- |")
    for s, r in zip(shard_epochs, ref_epochs):
        s_rate = s["samples"] / s["seconds"]
        r_rate = r["samples"] / r["seconds"]
        print(f"| {r['epoch']} | {s_rate:.0f} | {r_rate:.0f} | "
              f"{s_rate / r_rate:.2f} | {s['index_wait']:.4f} s "
              f"({100 * s['index_wait'] / s['seconds']:.3f} % of "
              f"{s['seconds']:.1f} s) |")
    s_total = sum(s["samples"] for s in shard_epochs) / sum(
        s["seconds"] for s in shard_epochs)
    r_total = sum(r["samples"] for r in ref_epochs) / sum(
        r["seconds"] for r in ref_epochs)
    print(f"| all | {s_total:.0f} | {r_total:.0f} | {s_total / r_total:.2f} "
          f"| |")
    print("\n| | shard-train | reference | difference |")
    print("| --- | --- | --- | --- |")
    print(f"| test accuracy ({args.eval_size:,} images) | {shard_accuracy:.4f} | "
          f"{ref_accuracy:.4f} | {100 * (shard_accuracy - ref_accuracy):+.2f}"
          f" points |", flush=True)


if __name__ == "__main__":
    main()
