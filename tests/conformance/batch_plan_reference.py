"""An independent implementation of the balanced-batches algorithm of
docs/balanced-batches.md, written from that text (not from the C++ code):
an epoch's windows, the micro-batches of a window, the final run dealt by least cost,
and the keyed order of the steps.

plan(costs, world, ...) returns the epoch's steps in training order, each a
list of `world` micro-batches (rank 0 first) of sample indices, over the
job's epoch order (by default the identity, as shard-batch-plan prints
them).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mixture_reference import MASK, Feistel, mix_key  # noqa: E402

DEFAULT_WINDOW = 65536
STEPS_SALT = 0x7374657073  # "steps"


def window_samples(world, batch_size, window):
    wanted = max(window or DEFAULT_WINDOW, 16 * world)
    if not batch_size:
        return wanted
    step = world * batch_size
    return -(-wanted // step) * step


def windows(n, world, tail, batch_size, window):
    """The epoch's windows as (first position, end position)."""
    size = window_samples(world, batch_size, window)
    spans = []
    start = 0
    while n - start > size:
        spans.append((start, start + size))
        start += size
    last = n - start
    if last < world:
        if tail == "drop":
            return spans
        last = world
    spans.append((start, start + last))
    return spans


def batch_cost(costs, cost_model):
    if cost_model == "padded":
        return len(costs) * max(costs)
    return sum(costs)


def consecutive_batches(ordered, batch_size, batch_tokens, cost_model):
    """The cost-sorted window [(position, cost)] cut into consecutive
    micro-batches."""
    batches = []
    begin = 0
    n = len(ordered)
    while begin < n:
        end = begin + 1
        if batch_size:
            end = min(n, begin + batch_size)
        else:
            while end < n and batch_cost([c for _, c in ordered[begin:end + 1]],
                                         cost_model) <= batch_tokens:
                end += 1
        batches.append(ordered[begin:end])
        begin = end
    return batches


def deal_by_least_cost(run, world, cost_model):
    """The run dealt into `world` micro-batches: one sample each, then each
    sample to the one that would cost least with it (lowest index on a
    tie)."""
    batches = [[entry] for entry in run[:world]]
    for entry in run[world:]:
        costs = [batch_cost([c for _, c in b] + [entry[1]], cost_model)
                 for b in batches]
        batches[costs.index(min(costs))].append(entry)
    return batches


def arrange_window(entries, world, batch_size, batch_tokens, cost_model,
                   key):
    """entries: [(position, cost)] in epoch order. Returns the steps in
    training order, each `world` lists of positions."""
    ordered = sorted(entries, key=lambda e: (-e[1], e[0]))
    rank_in_order = {p: i for i, (p, _) in enumerate(ordered)}
    batches = consecutive_batches(ordered, batch_size, batch_tokens,
                                  cost_model)
    whole = len(batches) - len(batches) % world
    run = [e for batch in batches[whole:] for e in batch]
    if 0 < len(run) < world:
        whole -= world
        run = [e for batch in batches[whole:] for e in batch]
    batches = batches[:whole] + (
        deal_by_least_cost(run, world, cost_model) if run else [])
    batches.sort(key=lambda b: (-batch_cost([c for _, c in b], cost_model),
                                rank_in_order[b[0][0]]))
    steps = [[[p for p, _ in b] for b in batches[s * world:(s + 1) * world]]
             for s in range(len(batches) // world)]
    order = Feistel(max(len(steps), 1), key)
    return [steps[order.at(slot)] for slot in range(len(steps))]


def step_key(seed, epoch, window):
    return mix_key((mix_key((mix_key(seed ^ STEPS_SALT) + epoch) & MASK) +
                    window) & MASK)


def plan(costs, world, batch_size=0, batch_tokens=0, cost_model="padded",
         window=0, seed=0, epoch=0, tail="pad", order=None):
    """The epoch's steps; `order` is the job's epoch order (a permutation
    of the samples; None: the identity), position p reading its entry
    p mod N."""
    n = len(costs)
    order = order if order is not None else range(n)
    steps = []
    for number, (start, end) in enumerate(
            windows(n, world, tail, batch_size, window)):
        entries = [(p, costs[order[p % n]]) for p in range(start, end)]
        for step in arrange_window(entries, world, batch_size, batch_tokens,
                                   cost_model, step_key(seed, epoch, number)):
            steps.append([[order[p % n] for p in batch] for batch in step])
    return steps
