#!/usr/bin/python3
"""Hugging Face Trainer on the coordinator's balanced batches against
Hugging Face's own samplers, on the same lengths (needs transformers:
Debian forky, tests/current-torch/run.sh's root).

For each length distribution (--distributions, of):
  heavy     lognormal(5, 1.6) clamped to [16, --context]: a heavy tail
  clipped   lognormal(6, 1) clamped to [16, --clip]: many samples at a short
            context
  text      the paragraphs of /usr/share/common-licenses as byte tokens, cut
            at 512: real text
1. Real training, W = 2 (torchrun --rdzv-backend shard, 2 CPU processes
   of one thread), one epoch of --samples samples (text: every paragraph)
   with hf_trainer_bench_worker.py: `shard` (shard.hf.ShardTrainer, at most
   --batch-size x the longest length padded tokens per micro-batch: the
   largest micro-batch the others make), and
   `group_by_length`, `distributed_length_grouped` and `random`
   (micro-batches of --batch-size). Per sampler: steps per rank, real
   (non-pad) tokens per second (both ranks' real tokens over the epoch's
   training time from its first step, the slower rank's), padding, step
   imbalance p50 / p99 (the largest rank's count x longest over the ranks'
   mean), samples trained more than once.
2. Simulated W = --simulate (8,16,64), --simulate-samples lengths drawn
   from the same distribution (text: its lengths drawn with replacement):
   the same samplers' plans for W ranks (shard: shard-batch-plan, the
   coordinator's code; the others:
   transformers' own LengthGroupedSampler / DistributedLengthGroupedSampler
   / a random permutation, batches dealt to ranks as accelerate does),
   with steps, padding, imbalance and "tokens per cost": real tokens over
   the sum of each step's largest padded cost x W, relative to
   group_by_length's.
--samplers may also name shard_attention: the project's batches with costs
L + L^2/d, d measured on the same model (shard.costs, shard.hf.
lm_step_seconds), trained at W = 2 only.
--packed-tokens T: packed sequences instead (part 1 only): every sampler's
micro-batches flattened into one row without padding (transformers'
DataCollatorWithFlattening), shard with --cost-model sum and T tokens a
row at most (shard_attention: T caps tokens, steps balanced by L + L^2/d),
the others micro-batches of round(T / the mean length) samples (rows over
T counted in the last column).
One run; no figure is asserted.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "hf_trainer_bench_worker.py")
SAMPLERS = ["shard", "group_by_length", "distributed_length_grouped",
            "random"]
# Trained only (the simulated worlds count padded tokens, not time).
ATTENTION = "shard_attention"
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from shardd_process import ShardDaemon  # noqa: E402


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("--samples", type=int, default=600)
    parser.add_argument("--context", type=int, default=1024)
    parser.add_argument("--clip", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--distributions", default="heavy,clipped,text")
    parser.add_argument("--samplers", default=",".join(SAMPLERS))
    parser.add_argument("--simulate", default="8,16,64")
    parser.add_argument("--simulate-samples", type=int, default=20000)
    parser.add_argument("--no-training", action="store_true",
                        help="only the simulated worlds")
    parser.add_argument("--packed-tokens", type=int, default=0,
                        help="packed rows of at most T tokens (no padding)")
    return parser.parse_args()


def lengths_of(name, args, samples):
    """`samples` lengths of the distribution (text: every paragraph when
    samples is None, else drawn with replacement)."""
    rng = np.random.default_rng(0)
    if name == "heavy":
        raw = rng.lognormal(5, 1.6, samples or args.samples)
        return np.clip(np.rint(raw), 16, args.context).astype(np.int64)
    if name == "clipped":
        raw = rng.lognormal(6, 1, samples or args.samples)
        return np.clip(np.rint(raw), 16, args.clip).astype(np.int64)
    if name == "text":
        sys.path.insert(0, os.path.join(HERE, "..", "..", "client", "python",
                                        "examples"))
        from hf_trainer import paragraphs
        text = np.array([len(p) for p in paragraphs(
            "/usr/share/common-licenses", 512)], dtype=np.int64)
        return text if samples is None else rng.choice(text, samples)
    raise ValueError(f"unknown distribution {name}")


def attention_length(args):
    """d of L + L^2/d for the workers' model, measured here."""
    import torch
    import transformers
    from shard.costs import fit_attention_length
    from shard.hf import lm_step_seconds
    torch.set_num_threads(1)
    config = transformers.GPT2Config(vocab_size=257, n_positions=args.context,
                                     n_embd=64, n_layer=2, n_head=2)
    model = transformers.GPT2LMHeadModel(config)
    lengths = [n for n in (64, 128, 256, 512, 1024) if n <= args.context]
    return fit_attention_length(lm_step_seconds(model), lengths=lengths)


def train(args, address, sampler, lengths_file, work, attention_d=None):
    """Per rank: [(count, longest, real, indices)], and the seconds."""
    env = dict(os.environ, PYTHONPATH=os.path.abspath(args.python_dir),
               USE_LIBUV="0", OMP_NUM_THREADS="1")
    out = os.path.join(work, f"{sampler}-{{rank}}.jsonl")
    extra = []
    if sampler == ATTENTION:
        sampler, extra = "shard", ["--attention-d", str(attention_d)]
    lengths = np.load(lengths_file)
    batch_size = args.batch_size
    batch_tokens = args.batch_size * int(lengths.max())
    if args.packed_tokens:
        extra.append("--packed")
        batch_tokens = args.packed_tokens
        batch_size = max(1, round(args.packed_tokens / float(lengths.mean())))
    subprocess.run(
        ["torchrun", "--rdzv-backend", "shard", "--nnodes", "1",
         "--nproc-per-node", "2", "--rdzv-endpoint", address, "--rdzv-id",
         f"bench-{sampler}-{os.path.basename(work)}", WORKER, "--sampler",
         sampler, "--lengths", lengths_file, "--coordinator", address,
         "--job", f"{os.path.basename(work)}-{sampler}", "--batch-size",
         str(batch_size), "--batch-tokens", str(batch_tokens), "--context",
         str(args.context), "--out", out, "--work",
         os.path.join(work, sampler), *extra],
        env=env, check=True, capture_output=True, text=True, timeout=3600)
    ranks, seconds = [], 0.0
    for path in sorted(glob.glob(out.replace("{rank}", "*"))):
        rows = [json.loads(line) for line in open(path)]
        seconds = max(seconds, rows[-1]["seconds"])
        ranks.append([tuple(row) for row in rows[:-1]])
    return ranks, seconds


def figures(ranks, cap=0):
    """steps, padding, imbalance p50/p99, computed tokens of the steps'
    largest ranks, real tokens, samples trained more than once, rows of
    two or more samples over `cap` tokens (0: not counted). A row is
    (count, longest, real, indices, computed tokens: count x longest
    padded, real packed)."""
    steps = min(len(rows) for rows in ranks)
    imbalance, largest = [], 0
    for step in range(steps):
        costs = [rows[step][4] for rows in ranks]
        imbalance.append(max(costs) / (sum(costs) / len(costs)))
        largest += max(costs)
    real = sum(row[2] for rows in ranks for row in rows)
    computed = sum(row[4] for rows in ranks for row in rows)
    seen = [i for rows in ranks for row in rows for i in row[3]]
    over = sum(1 for rows in ranks for row in rows
               if cap and row[0] > 1 and row[4] > cap)
    return dict(steps=steps, padding=1 - real / computed,
                p50=float(np.percentile(imbalance, 50)),
                p99=float(np.percentile(imbalance, 99)),
                largest=largest, real=real, over=over,
                repeated=len(seen) - len(set(seen)))


def simulated(sampler, lengths, world, args, work):
    """Per rank [(count, longest, real, indices)] of the sampler's plan."""
    import torch
    from transformers.trainer_pt_utils import (
        DistributedLengthGroupedSampler, LengthGroupedSampler)
    b = args.batch_size
    if sampler == "shard":
        path = os.path.join(work, "sim.u32")
        lengths.astype("<u4").tofile(path)
        plan = subprocess.run(
            [os.path.join(args.bin_dir, "shard-batch-plan"), "--costs", path,
             "--batch-tokens", str(b * int(lengths.max())), "--world",
             str(world)],
            capture_output=True, text=True, check=True).stdout.splitlines()
        per_rank = [[] for _ in range(world)]
        for line in plan:
            for rank, batch in enumerate(json.loads(line)):
                per_rank[rank].append(batch)
    elif sampler == "distributed_length_grouped":
        per_rank = []
        for rank in range(world):
            order = list(DistributedLengthGroupedSampler(
                b, lengths=lengths.tolist(), num_replicas=world, rank=rank))
            per_rank.append([order[i:i + b] for i in range(0, len(order), b)])
    else:
        if sampler == "group_by_length":
            order = list(LengthGroupedSampler(b, lengths=lengths.tolist()))
        else:
            order = torch.randperm(len(lengths),
                                   generator=torch.Generator().manual_seed(0)
                                   ).tolist()
        batches = [order[i:i + b] for i in range(0, len(order), b)]
        # accelerate's BatchSamplerShard: batch i to rank i % W, the last
        # round completed from the first batches (even_batches).
        while len(batches) % world:
            batches.append(batches[len(batches) % world])
        per_rank = [batches[rank::world] for rank in range(world)]
    return [[(len(batch), int(lengths[batch].max()),
              int(lengths[batch].sum()), list(batch),
              len(batch) * int(lengths[batch].max())) for batch in rows]
            for rows in per_rank]


def print_row(distribution, world, sampler, found, extra):
    print(f"| {distribution} | {world} | {sampler} | {found['steps']} | "
          f"{100 * found['padding']:.1f} % | {found['p50']:.3f} | "
          f"{found['p99']:.3f} | {found['repeated']} | {extra} |",
          flush=True)


def main():
    args = arguments()
    sys.path.insert(0, args.python_dir)
    samplers = args.samplers.split(",")
    attention_d = None
    if ATTENTION in samplers and not args.no_training:
        attention_d = attention_length(args)
        print(f"{ATTENTION}: measured d = {attention_d:.0f}", flush=True)
    print("| lengths | W | sampler | steps/rank | padding | imbalance p50 | "
          "imbalance p99 | repeated | real tokens/s (W=2) or tokens per "
          "cost vs group_by_length |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    with ShardDaemon(args.bin_dir) as daemon, \
            tempfile.TemporaryDirectory() as work:
        for distribution in args.distributions.split(","):
            lengths = lengths_of(distribution, args,
                                 None if distribution == "text" else
                                 args.samples)
            path = os.path.join(work, f"{distribution}.npy")
            np.save(path, lengths)
            if not args.no_training:
                for sampler in samplers:
                    run_dir = os.path.join(work, f"{distribution}-{sampler}")
                    os.makedirs(run_dir)
                    ranks, seconds = train(args, daemon.address, sampler,
                                           path, run_dir, attention_d)
                    found = figures(ranks, args.packed_tokens)
                    over = (f" ({found['over']} rows over T)"
                            if args.packed_tokens else "")
                    print_row(distribution, 2, sampler, found,
                              f"{found['real'] / seconds:,.0f}{over}")
            if args.packed_tokens:
                continue  # run_packing_bench.py simulates packed worlds
            many = (lengths_of(distribution, args, args.simulate_samples)
                    if args.simulate else None)
            for world in map(int, filter(None, args.simulate.split(","))):
                rows = {s: figures(simulated(s, many, world, args, work))
                        for s in samplers if s != ATTENTION}
                anchor = rows.get("group_by_length")
                for sampler, found in rows.items():
                    ratio = (found["real"] / found["largest"]) / (
                        anchor["real"] / anchor["largest"]) if anchor else 0
                    print_row(distribution, world, sampler, found,
                              f"{ratio:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
