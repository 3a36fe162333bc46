"""Costs that follow a transformer's step time (docs/balanced-batches.md
"Costs that follow step time").

A micro-batch of B sequences padded to length L costs a transformer about
a * B * L (the per-token layers) plus b * B * L^2 (attention): with
per-sample costs c(L) = L + L^2 / d, where d = a / b, the `padded` cost model
(count x largest cost) is B * c(L), proportional to that step time. d is
the length at which attention costs as much as the rest; it depends on the
model and the machine, so it is measured:

    from shard.costs import fit_attention_length, attention_costs
    d = fit_attention_length(step_seconds)   # step_seconds(count, length)
    costs = attention_costs(lengths, d)
    budget = attention_costs([longest], d)[0] * count_that_fits_at_longest

step_seconds times one training step (forward and backward) of `count`
sequences of `length` tokens; shard.hf.lm_step_seconds(model) makes one
for a Hugging Face causal language model. numpy only; no torch needed.
"""
import math

import numpy as np

DEFAULT_LENGTHS = (64, 128, 256, 512, 1024)


def fit_attention_length(step_seconds, lengths=DEFAULT_LENGTHS,
                         tokens=8192, repeats=3):
    """Times step_seconds(count, length) for each length with count =
    tokens // length (at least 1), keeps each shape's median of `repeats`
    runs (after one warm-up), fits seconds = a*count*length +
    b*count*length^2 by least squares and returns d = a / b (math.inf
    when the quadratic term is not measurable, see fit_from_times: costs
    are then the lengths).
    ValueError for fewer than two lengths, a non-positive length or a
    time that is not a positive number."""
    shapes = _shapes(lengths, tokens)
    seconds = []
    for count, length in shapes:
        step_seconds(count, length)  # Warm-up (allocations, caches).
        seconds.append(float(np.median([step_seconds(count, length)
                                        for _ in range(repeats)])))
    return fit_from_times(shapes, seconds)


def fit_from_times(shapes, seconds):
    """d = a / b of the least-squares fit of seconds = a*B*L + b*B*L^2 over
    the measured (B, L) shapes; math.inf when b <= 0 or d is past 1,000
    times the longest length measured."""
    if len({length for _, length in shapes}) < 2:
        raise ValueError("need step times at two lengths or more")
    if any(not (s > 0 and math.isfinite(s)) for s in seconds):
        raise ValueError(f"step times must be positive seconds: {seconds}")
    tokens = np.array([count * length for count, length in shapes], float)
    lengths = np.array([length for _, length in shapes], float)
    # Relative errors count alike for short and long shapes.
    weights = 1.0 / np.asarray(seconds, float)
    design = np.stack([tokens, tokens * lengths], axis=1) * weights[:, None]
    (a, b), *_ = np.linalg.lstsq(design, np.ones(len(shapes)), rcond=None)
    # Past 1,000 x the longest length measured, attention changes no cost
    # by 0.1%: not measurable.
    if b <= 0 or a > b * 1000 * lengths.max():
        return math.inf
    if a <= 0:
        return 1.0  # Attention dominates at every length measured.
    return float(a / b)


def attention_costs(lengths, d):
    """Per-sample costs c(L) = ceil(L + L^2 / d) as a numpy uint32 array
    (the lengths themselves for d = inf). ValueError where a cost does not
    fit 32 bits, the coordinator's width."""
    lengths = np.asarray(lengths, dtype=np.float64)
    if lengths.size and lengths.min() < 0:
        raise ValueError("lengths must not be negative")
    costs = lengths if math.isinf(d) else np.ceil(lengths + lengths ** 2 / d)
    if costs.size and costs.max() > np.iinfo(np.uint32).max:
        raise ValueError(f"a cost of {costs.max():.0f} does not fit 32 bits: "
                         f"d = {d} is too small for these lengths")
    return costs.astype(np.uint32)


def _shapes(lengths, tokens):
    shapes = []
    for length in lengths:
        if length <= 0:
            raise ValueError(f"lengths must be positive: {length}")
        shapes.append((max(1, tokens // length), int(length)))
    return shapes


__all__ = ["DEFAULT_LENGTHS", "attention_costs", "fit_attention_length",
           "fit_from_times"]
