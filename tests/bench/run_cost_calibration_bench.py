#!/usr/bin/python3
"""Whether balanced batches balance step time: costs = lengths against
costs = L + L^2/d with d measured (shard.costs), on a real transformer.

1. The model: a causal language model of --layers layers, width --width,
   over --max-length positions (Hugging Face GPT-2 when transformers is
   installed, else torch's TransformerEncoder with a causal mask), CPU,
   one thread per process as a rank of a 2-core machine would have.
2. d is measured with shard.costs.fit_attention_length on that model.
3. --samples lengths, lognormal(5, --sigma) clamped to [16, --max-length],
   are planned by shard-batch-plan (the coordinator's code) for --world
   ranks twice: with costs = lengths and a budget of --tokens padded tokens,
   and with costs = ceil(L + L^2/d) and the budget that holds the same
   micro-batch at --max-length (count x c(max-length)).
4. The first --steps steps of each plan: every rank's micro-batch is timed
   (forward + backward, padded to its longest), one after another; a
   step's time is its slowest rank's (the all-reduce waits for it), its
   imbalance that time over the ranks' mean.
Prints one line per plan: d, steps timed, imbalance p50 / p90 / max, real
(non-pad) tokens per second of step time (sum of real tokens over the
sum of slowest-rank times x --world), padding. No figure is asserted.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--python-dir", required=True)
    parser.add_argument("--world", type=int, default=4)
    parser.add_argument("--samples", type=int, default=4000)
    parser.add_argument("--sigma", type=float, default=1.0)
    parser.add_argument("--max-length", type=int, default=1024)
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--width", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args()


def language_model(args):
    """(name, step_seconds(count, length)) of the model measured."""
    import torch
    torch.set_num_threads(1)
    torch.manual_seed(0)
    try:
        import transformers
        from shard.hf import lm_step_seconds
        config = transformers.GPT2Config(
            vocab_size=257, n_positions=args.max_length, n_embd=args.width,
            n_layer=args.layers, n_head=2)
        model = transformers.GPT2LMHeadModel(config)
        return (f"GPT-2 ({args.layers} layers, width {args.width}, "
                f"transformers {transformers.__version__})",
                lm_step_seconds(model))
    except ImportError:
        return encoder_model(args, torch)


def encoder_model(args, torch):
    layer = torch.nn.TransformerEncoderLayer(args.width, 2, 4 * args.width,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, args.layers)
    embed = torch.nn.Embedding(257, args.width)

    def step_seconds(count, length):
        ids = torch.randint(0, 257, (count, length))
        mask = torch.triu(torch.full((length, length), float("-inf")), 1)
        began = time.perf_counter()
        model(embed(ids), mask=mask).sum().backward()
        seconds = time.perf_counter() - began
        model.zero_grad(set_to_none=True)
        embed.zero_grad(set_to_none=True)
        return seconds
    return (f"torch TransformerEncoder ({args.layers} layers, width "
            f"{args.width}, torch {torch.__version__})", step_seconds)


def plan(bin_dir, costs, budget, world, work):
    path = os.path.join(work, "costs.u32")
    np.asarray(costs, dtype="<u4").tofile(path)
    done = subprocess.run(
        [os.path.join(bin_dir, "shard-batch-plan"), "--costs", path,
         "--batch-tokens", str(budget), "--world", str(world)],
        capture_output=True, text=True, check=True)
    return [json.loads(line) for line in done.stdout.splitlines() if line]


def time_steps(steps, lengths, step_seconds):
    """[(slowest rank's seconds, imbalance, real tokens, padded tokens)]."""
    timed = []
    for ranks in steps:
        seconds = []
        real = padded = 0
        for batch in ranks:
            longest = max(int(lengths[i]) for i in batch)
            seconds.append(step_seconds(len(batch), longest))
            real += sum(int(lengths[i]) for i in batch)
            padded += len(batch) * longest
        slowest = max(seconds)
        timed.append((slowest, slowest / (sum(seconds) / len(seconds)),
                      real, padded))
    return timed


def report(name, d, budget, timed, world):
    imbalance = np.array([row[1] for row in timed])
    seconds = sum(row[0] for row in timed)
    real = sum(row[2] for row in timed)
    padded = sum(row[3] for row in timed)
    print(f"{name:<18} d={d:>7.0f} budget={budget:>9} steps={len(timed):>3} "
          f"imbalance p50={np.percentile(imbalance, 50):.3f} "
          f"p90={np.percentile(imbalance, 90):.3f} max={imbalance.max():.3f} "
          f"real tokens/s={real / (seconds * world):,.0f} "
          f"padding={100 * (1 - real / padded):.1f}%", flush=True)


def main():
    args = arguments()
    sys.path.insert(0, args.python_dir)
    from shard.costs import attention_costs, fit_attention_length
    model_name, step_seconds = language_model(args)
    print(f"model: {model_name}", flush=True)
    lengths_measured = [length for length in (64, 128, 256, 512, 1024, 2048)
                        if length <= args.max_length]
    d = fit_attention_length(step_seconds, lengths=lengths_measured,
                             tokens=args.tokens, repeats=3)
    print(f"measured d = {d:.0f} (attention costs as much as the rest at "
          f"length {d:.0f})", flush=True)
    rng = np.random.default_rng(args.seed)
    lengths = np.clip(np.rint(rng.lognormal(5, args.sigma, args.samples)),
                      16, args.max_length).astype(np.int64)
    count_at_longest = max(1, args.tokens // args.max_length)
    cases = [("costs = L", lengths, args.tokens, math.inf)]
    if math.isfinite(d):
        costs = attention_costs(lengths, d)
        budget = int(attention_costs([args.max_length], d)[0]) * \
            count_at_longest
        cases.append(("costs = L + L^2/d", costs, budget, d))
    with tempfile.TemporaryDirectory() as work:
        for name, costs, budget, shown_d in cases:
            steps = plan(args.bin_dir, costs, budget, args.world, work)
            timed = time_steps(steps[:args.steps], lengths, step_seconds)
            report(name, shown_d if math.isfinite(shown_d) else 0, budget,
                   timed, args.world)
    return 0


if __name__ == "__main__":
    sys.exit(main())
