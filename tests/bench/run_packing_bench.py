#!/usr/bin/python3
"""How full and how even micro-batches of packed sequences are, and what
the steps cost, in one run: for each length set, world size W and token
budget T, the packers below on the same lengths (clamped to [1, T]), one
epoch each. A micro-batch holds at most T tokens, a packed row without
padding (exit 1 if this project's plan holds one of two or more samples
over T).

  shard          this project, --cost-model sum --batch-tokens T
                 (shard-batch-plan: the coordinator's planning code,
                 docs/balanced-batches.md): balanced by tokens;
  shard_d2048,   the same with --attention-length 2048 or 512: T caps
  shard_d512     tokens, the steps are balanced by L + L^2 / d;
  lpt_steps      the Multipack sampler's published rule, re-created here:
                 in the shuffled order, each step takes the longest run of
                 next samples that longest-processing-time-first places on
                 W ranks of T tokens each (a binary search on the run's
                 length), and rank r trains what LPT put on it;
  ffd_bins       its first-fit-decreasing variant: each group of --group
                 samples of the shuffled order is packed first-fit-
                 decreasing into micro-batches of T, the micro-batches are
                 shuffled and dealt W to a step (an incomplete last step is
                 dropped, as the packers do);
  gbl_flat       Hugging Face's group_by_length with flattening: a random
                 permutation cut into megabatches of 50 x B samples, each
                 sorted by length, cut into micro-batches of B (B = T over
                 the mean length), dealt to the ranks round-robin, each
                 flattened into one row (a count, not a budget: rows over
                 T are counted).

Columns: steps; fill (real tokens over W x T x steps); balance (real
tokens over W x the sum over steps of the largest rank's tokens); the
summed step time (the sum over steps of the slowest rank's) under tokens
and under L + L^2 / d for d = 2048 and 512, each over ffd_bins'
(Multipack's V2 = 1.00); samples the epoch left out and served twice;
micro-batches over T.

Length sets: lognormal (mu 6, sigma 1); bimodal (half uniform 64..511,
half 1,536..3,071 tokens); real text (paragraphs of the Debian copyright
files and changelogs under /usr/share/doc, a token per 4 bytes); long
documents (whole files: those, the C headers under /usr/include and the
Python modules under /usr/lib/python3/dist-packages, a token per 4 bytes).
The synthetic sets have --samples lengths, the real ones every paragraph
or file the machine has (--real-samples caps them, chosen by a seeded
generator).

  tests/bench/run_packing_bench.py --bin-dir build/bin
      [--samples 200000] [--real-samples 0] [--worlds 2,8,64]
      [--budgets 4096,16384]
      [--sets lognormal,bimodal,text,documents] [--group 100000]
"""
import argparse
import gzip
import heapq
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "conformance"))
import batch_plan_reference as reference  # noqa: E402

SEED = 7
DOC_ROOT = "/usr/share/doc"


def debian_texts():
    """The bytes of every copyright file and changelog under DOC_ROOT, in
    path order."""
    texts = []
    for folder, _, files in sorted(os.walk(DOC_ROOT)):
        for name in sorted(files):
            path = os.path.join(folder, name)
            if os.path.islink(path):
                continue
            try:
                if name == "copyright":
                    with open(path, "rb") as file:
                        texts.append(file.read())
                elif name.startswith("changelog") and name.endswith(".gz"):
                    with gzip.open(path) as file:
                        texts.append(file.read())
            except OSError:
                continue
    return texts


def file_sizes(root, suffix):
    sizes = []
    for folder, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            path = os.path.join(folder, name)
            if name.endswith(suffix) and not os.path.islink(path):
                sizes.append(os.path.getsize(path))
    return sizes


def length_sets(n, real_n, names):
    """{name: raw lengths in tokens} of the sets asked for: n of each
    synthetic one, real_n (0: all) of each real one."""
    rng = np.random.default_rng(SEED)
    sets = {}
    if "lognormal" in names:
        sets["lognormal"] = rng.lognormal(6.0, 1.0, n)
    if "bimodal" in names:
        half = n // 2
        bimodal = np.concatenate([rng.integers(64, 512, half),
                                  rng.integers(1536, 3072, n - half)])
        rng.shuffle(bimodal)
        sets["bimodal"] = bimodal
    if "text" in names or "documents" in names:
        texts = debian_texts()
        if "text" in names:
            paragraphs = np.array(
                [len(b" ".join(p.split())) for text in texts
                 for p in text.split(b"\n\n") if p.strip()])
            sets["real text"] = pick(paragraphs, real_n, rng) / 4
        if "documents" in names:
            documents = np.array(
                [len(text) for text in texts] +
                file_sizes("/usr/include", ".h") +
                file_sizes("/usr/lib/python3/dist-packages", ".py"))
            sets["long documents"] = pick(documents[documents > 0],
                                          real_n, rng) / 4
    return sets


def pick(values, n, rng):
    """n of `values` (all of them when n is 0 or at least their count)."""
    if n == 0 or len(values) <= n:
        return values
    return rng.choice(values, n, replace=False)


def clamped(lengths, budget):
    return np.clip(np.ceil(lengths), 1, budget).astype(np.int64)


def shard_steps(bin_dir, lengths, world, budget, attention_length=0):
    with tempfile.NamedTemporaryFile(suffix=".u32") as file:
        lengths.astype("<u4").tofile(file.name)
        out = subprocess.run(
            [os.path.join(bin_dir, "shard-batch-plan"), "--costs", file.name,
             "--world", str(world), "--batch-tokens", str(budget),
             "--cost-model", "sum", "--seed", str(SEED)] +
            (["--attention-length", str(attention_length)]
             if attention_length else []),
            check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def lpt(samples, lengths, bins, budget):
    """Longest processing time first: `samples` (longest first) each to
    the least loaded of `bins`; None when one would pass `budget`."""
    loads = [(0, b) for b in range(bins)]
    placed = [[] for _ in range(bins)]
    for sample in samples:
        load, b = heapq.heappop(loads)
        load += int(lengths[sample])
        if load > budget:
            return None
        placed[b].append(sample)
        heapq.heappush(loads, (load, b))
    return placed


def lpt_steps(lengths, world, budget):
    order = np.random.default_rng(SEED).permutation(len(lengths))
    ends = np.cumsum(lengths[order])
    steps, start = [], 0
    while start < len(order):
        def placed(count):
            run = sorted(order[start:start + count],
                         key=lambda s: -lengths[s])
            return lpt(run, lengths, world, budget)
        # No run longer than W x T tokens fits.
        before = int(ends[start - 1]) if start else 0
        high = int(np.searchsorted(ends, before + world * budget,
                                   side="right")) - start
        low, high = 1, max(1, high)
        while low < high:  # the longest run that fits
            middle = (low + high + 1) // 2
            if placed(middle) is not None:
                low = middle
            else:
                high = middle - 1
        steps.append(placed(low))
        start += low
    return steps


def first_fit_decreasing(samples, lengths, budget):
    """Each sample, longest first, to the first bin with room for it (the
    reference's FirstFit finds it), or to a new bin."""
    bins, left = [], []
    fit = reference.FirstFit(len(samples), budget)
    for sample in sorted(samples, key=lambda s: -lengths[s]):
        length = int(lengths[sample])
        b = fit.first_with_room(length)
        if b is None or b >= len(bins):
            b = len(bins)
            bins.append([])
            left.append(budget)
        bins[b].append(sample)
        left[b] -= length
        fit.set_room(b, left[b])
    return bins


def ffd_bins_steps(lengths, world, budget, group):
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(lengths))
    bins = []
    for start in range(0, len(order), group):
        bins += first_fit_decreasing(order[start:start + group], lengths,
                                     budget)
    rng.shuffle(bins)
    return [bins[s:s + world] for s in range(0, len(bins) - world + 1,
                                             world)]


def group_by_length_steps(lengths, world, budget):
    rng = np.random.default_rng(SEED)
    order = rng.permutation(len(lengths))
    size = max(1, budget // int(np.mean(lengths)))
    batches = []
    for start in range(0, len(order), 50 * size):
        mega = sorted(order[start:start + 50 * size],
                      key=lambda s: -lengths[s])
        batches += [mega[b:b + size] for b in range(0, len(mega), size)]
    return [batches[s:s + world] for s in range(0, len(batches) - world + 1,
                                                world)]


def figures(steps, lengths, world, budget):
    tokens = lengths.astype(np.float64)
    times = {"tokens": tokens}
    for d in (2048, 512):
        times[d] = tokens + tokens * tokens / d
    summed = dict.fromkeys(times, 0.0)
    real = 0.0
    served = []
    over = 0
    for step in steps:
        loads = [float(tokens[list(b)].sum()) if b else 0.0 for b in step]
        real += sum(loads)
        over += sum(1 for b, load in zip(step, loads)
                    if len(b) > 1 and load > budget)
        for key, cost in times.items():
            summed[key] += max(float(cost[list(b)].sum()) if b else 0.0
                               for b in step)
        for b in step:
            served.extend(b)
    count = len(steps)
    distinct = len(set(served))
    return dict(steps=count, fill=real / (world * budget * count),
                balance=real / (world * summed["tokens"]), summed=summed,
                left_out=len(lengths) - distinct,
                repeated=len(served) - distinct, over=over)


def packers(args, lengths, world, budget):
    return {
        "shard": lambda: shard_steps(args.bin_dir, lengths, world, budget),
        "shard_d2048": lambda: shard_steps(args.bin_dir, lengths, world,
                                           budget, 2048),
        "shard_d512": lambda: shard_steps(args.bin_dir, lengths, world,
                                          budget, 512),
        "lpt_steps": lambda: lpt_steps(lengths, world, budget),
        "ffd_bins": lambda: ffd_bins_steps(lengths, world, budget,
                                           args.group),
        "gbl_flat": lambda: group_by_length_steps(lengths, world, budget),
    }


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--samples", type=int, default=200000)
    parser.add_argument("--real-samples", type=int, default=0)
    parser.add_argument("--worlds", default="2,8,64")
    parser.add_argument("--budgets", default="4096,16384")
    parser.add_argument("--sets", default="lognormal,bimodal,text,documents")
    parser.add_argument("--group", type=int, default=100000)
    args = parser.parse_args()
    raw_sets = length_sets(args.samples, args.real_samples,
                           args.sets.split(","))
    print("| lengths | W | T | packer | steps | fill | balance | "
          "step time, tokens | d = 2048 | d = 512 | left out | twice | "
          "over T |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
          "| --- | --- |")
    broken = []
    for name, raw in raw_sets.items():
        for budget in (int(t) for t in args.budgets.split(",")):
            lengths = clamped(raw, budget)
            for world in (int(w) for w in args.worlds.split(",")):
                rows = {packer: figures(steps(), lengths, world, budget)
                        for packer, steps in
                        packers(args, lengths, world, budget).items()}
                anchor = rows["ffd_bins"]["summed"]
                for packer, got in rows.items():
                    if packer.startswith("shard") and got["over"]:
                        broken.append(f"{name} W={world} T={budget} "
                                      f"{packer}: {got['over']} over T")
                    ratios = " | ".join(
                        f"{got['summed'][key] / anchor[key]:.3f}"
                        for key in ("tokens", 2048, 512))
                    print(f"| {name} ({len(lengths):,}) | {world} | "
                          f"{budget} | {packer} | {got['steps']:,} | "
                          f"{100 * got['fill']:.1f} % | "
                          f"{100 * got['balance']:.2f} % | {ratios} | "
                          f"{got['left_out']:,} | {got['repeated']:,} | "
                          f"{got['over']:,} |", flush=True)
    for line in broken:
        print(line, file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
