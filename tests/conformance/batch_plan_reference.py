"""An independent implementation of the balanced-batches algorithm of
docs/balanced-batches.md, written from that text (not from the C++ code):
an epoch's windows, the micro-batches of a window, the final run dealt by least cost,
the keyed order of the steps, and the balance figures of a plan.

plan(costs, world, ...) returns the epoch's steps in training order, each a
list of `world` micro-batches (rank 0 first) of sample indices, over the
job's epoch order (by default the identity, as shard-batch-plan prints
them); with resizes, the steps of the epoch's last world.
"""
from fractions import Fraction
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mixture_reference import MASK, Feistel, mix_key  # noqa: E402

DEFAULT_WINDOW = 65536
STEPS_SALT = 0x7374657073  # "steps"


DEFAULT_WINDOW_STEPS = 256
MAX_DEFAULT_WINDOW = 2**22


def default_window(world, batch_tokens, costs_total, count):
    """65,536, or with a token budget and the costs' sum the samples of 64
    steps at the costs' mean, within 65,536 .. 2^22."""
    if not batch_tokens or not costs_total:
        return DEFAULT_WINDOW
    wanted = -(-DEFAULT_WINDOW_STEPS * world * batch_tokens * count //
               costs_total)
    return min(MAX_DEFAULT_WINDOW, max(DEFAULT_WINDOW, wanted))


def window_samples(world, batch_size, window, batch_tokens=0, costs_total=0,
                   count=0):
    wanted = max(window or default_window(world, batch_tokens, costs_total,
                                          count), 16 * world)
    step = world * (batch_size or 1)
    return -(-wanted // step) * step


U64_MAX = 2**64 - 1


def batch_cost(costs, cost_model):
    if cost_model == "padded":
        return len(costs) * max(costs)
    return sum(costs)


def balance_cost(costs, cost_model, attention_length=0):
    """What the steps are balanced by: the cost model's cost, or with an
    attention length d the time cost, the sum of L + floor(L^2 / d) over
    the samples (at most 2^64 - 1)."""
    if not attention_length:
        return batch_cost(costs, cost_model)
    return min(U64_MAX, sum(c + c * c // attention_length for c in costs))


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


class FirstFit:
    """Micro-batches by the room they have left under a budget: the first
    one (in the order they were started) with room for a cost, in
    O(log n), over a segment tree of the largest room in each range. A
    micro-batch not started yet has the whole budget."""

    def __init__(self, capacity, budget):
        self.size = 1
        while self.size < capacity:
            self.size *= 2
        self.room = [budget] * (2 * self.size)

    def first_with_room(self, cost):
        if self.room[1] < cost:
            return None
        node = 1
        while node < self.size:
            node = 2 * node if self.room[2 * node] >= cost else 2 * node + 1
        return node - self.size

    def set_room(self, batch, room):
        node = batch + self.size
        self.room[node] = room
        while node > 1:
            node //= 2
            self.room[node] = max(self.room[2 * node], self.room[2 * node + 1])


def first_fit_decreasing(ordered, batch_tokens):
    """`sum` with a budget T: each sample of the sorted window in turn goes
    to the first micro-batch (in the order they were started) whose sum
    with it is at most T, or starts a new one; a sample over T starts one
    that takes nothing else."""
    batches, sums = [], []
    fit = FirstFit(len(ordered), batch_tokens)
    for entry in ordered:
        j = fit.first_with_room(entry[1])
        if j is None or j >= len(batches):
            j = len(batches)
            batches.append([])
            sums.append(0)
        batches[j].append(entry)
        sums[j] += entry[1]
        fit.set_room(j, max(batch_tokens - sums[j], 0)
                     if sums[j] <= batch_tokens else -1)
    return batches


def deal_by_least_cost(run, count, cost_model, batch_size):
    """Fixed counts: the run dealt into `count` micro-batches: one sample
    each, then each sample to the one that would cost least with it among
    those holding fewer than batch_size samples (among all when every one
    is full; lowest index on a tie)."""
    batches = [[entry] for entry in run[:count]]
    for entry in run[count:]:
        open_batches = ([j for j, b in enumerate(batches)
                         if len(b) < batch_size] or range(len(batches)))
        costs = [batch_cost([c for _, c in batches[j]] + [entry[1]],
                            cost_model) for j in open_batches]
        batches[open_batches[costs.index(min(costs))]].append(entry)
    return batches


def pack(run, limit, cost_model, count=None, budget=0, attention_length=0):
    """The run cut in order into micro-batches costing at most `limit` (as
    steps are balanced) and, with an attention length, holding at most
    `budget` tokens (a sample over them alone); with `count`, a new one
    also starts when the samples left are as many as the micro-batches
    still to start, so that there are exactly `count` of them."""
    batches = []
    for i, entry in enumerate(run):
        if batches:
            grown = [c for _, c in batches[-1]] + [entry[1]]
            full = (balance_cost(grown, cost_model, attention_length) > limit
                    or attention_length and sum(grown) > budget)
            short = count is not None and len(run) - i == count - len(batches)
            if not full and not short:
                batches[-1].append(entry)
                continue
        batches.append([entry])
    return batches


def cut_by_least_largest(run, count, cost_model, budget=0,
                         attention_length=0):
    """Token budgets: the run cut in order into exactly `count`
    micro-batches, the most expensive as cheap as possible: L is the
    smallest whole number for which pack(run, L) makes at most `count`
    (with an attention length, L bounds the time cost and every
    micro-batch holds at most `budget` tokens)."""
    costs = [c for _, c in run]
    low = 0
    high = (balance_cost(costs, cost_model, attention_length)
            if attention_length else batch_cost(costs, "padded"))
    while low < high:
        middle = (low + high) // 2
        if len(pack(run, middle, cost_model, None, budget,
                    attention_length)) <= count:
            high = middle
        else:
            low = middle + 1
    return pack(run, low, cost_model, count, budget, attention_length)


def arrange_window(entries, world, batch_size, batch_tokens, cost_model,
                   key, attention_length=0):
    """entries: [(position, cost)] in epoch order. Returns the steps in
    training order, each `world` lists of positions."""
    ordered = sorted(entries, key=lambda e: (-e[1], e[0]))
    rank_in_order = {p: i for i, (p, _) in enumerate(ordered)}
    if batch_tokens and cost_model == "sum":
        batches = first_fit_decreasing(ordered, batch_tokens)
    else:
        batches = consecutive_batches(ordered, batch_size, batch_tokens,
                                      cost_model)

    def by_cost(group):
        return sorted(group, key=lambda b: (
            -balance_cost([c for _, c in b], cost_model, attention_length),
            rank_in_order[b[0][0]]))

    m, k = len(batches), len(batches) % world
    if k or not batch_size or len(batches[-1]) < batch_size:
        r = k or world  # micro-batches left over
        if m > 2 * world:
            kept = m - r - world
        else:
            kept = m - r
            if sum(len(b) for b in batches[kept:]) < world and kept >= world:
                kept -= world
        def run_from(first):
            return sorted((e for batch in batches[first:] for e in batch),
                          key=lambda e: rank_in_order[e[0]])

        run = run_from(kept)
        dealt = (2 * world if m > 2 * world and len(run) >= 2 * world
                 else world)
        while batch_tokens:  # the budget is a hard cap
            # The cut under the token budget alone.
            cut = len(pack(run, U64_MAX if attention_length else batch_tokens,
                           cost_model, None, batch_tokens, attention_length))
            dealt = max(dealt, -(-cut // world) * world)
            if len(run) >= dealt or kept == 0:
                break
            kept = max(0, kept - world)
            run = run_from(kept)
        if batch_size:
            again = deal_by_least_cost(run, dealt, cost_model, batch_size)
        else:
            again = cut_by_least_largest(run, dealt, cost_model, batch_tokens,
                                         attention_length)
        batches = by_cost(batches[:kept]) + by_cost(again)
    else:
        batches = by_cost(batches)
    steps = [[[p for p, _ in b] for b in batches[s * world:(s + 1) * world]]
             for s in range(len(batches) // world)]
    order = Feistel(max(len(steps), 1), key)
    return [steps[order.at(slot)] for slot in range(len(steps))]


def step_key(seed, epoch, window):
    return mix_key((mix_key((mix_key(seed ^ STEPS_SALT) + epoch) & MASK) +
                    window) & MASK)


def with_tail(rest, next_pad, world, size, tail):
    """A world's rest after the tail rule: a last window of j samples past
    a multiple of `world` loses its last j, or is padded with positions
    next_pad, ... to the next multiple. Returns the rest and the next
    padding position."""
    if not rest:
        return rest, next_pad
    over = ((len(rest) - 1) % size + 1) % world
    if not over:
        return rest, next_pad
    if tail == "drop":
        return rest[:len(rest) - over], next_pad
    extra = world - over
    return rest + list(range(next_pad, next_pad + extra)), next_pad + extra


def plan(costs, world, batch_size=0, batch_tokens=0, cost_model="padded",
         window=0, seed=0, epoch=0, tail="pad", order=None, resizes=(),
         attention_length=0, costs_total=None):
    """The epoch's steps; `costs` gives each sample's cost, `order` is the
    job's epoch order (its N entries are samples: a permutation of them,
    or a mixture's chosen samples shuffled; None: the identity), position
    p reading its entry p mod N. With `resizes` [(base, world), ...]
    (bases increasing), a world of that size serves what the previous one
    left from each base on, and the last world's steps are returned."""
    order = order if order is not None else range(len(costs))
    # The job's costs_total: the costs' sum, as the clients give it (0: a
    # job created without it).
    total = sum(costs) if costs_total is None else costs_total
    n = len(order)
    worlds = [(0, world)] + list(resizes)
    rest, next_pad, first_window = list(range(n)), n, 0
    for k, (base, size_of_world) in enumerate(worlds):
        size = window_samples(size_of_world, batch_size, window,
                              batch_tokens, total, len(costs))
        rest, next_pad = with_tail(rest, next_pad, size_of_world, size, tail)
        spans = [(i, min(i + size, len(rest)))
                 for i in range(0, len(rest), size)]

        def arranged(j):
            begin, end = spans[j]
            entries = [(p, costs[order[p % n]]) for p in rest[begin:end]]
            return arrange_window(entries, size_of_world, batch_size,
                                  batch_tokens, cost_model,
                                  step_key(seed, epoch, first_window + j),
                                  attention_length)

        if k + 1 == len(worlds):
            return [[[order[p % n] for p in batch] for batch in step]
                    for j in range(len(spans)) for step in arranged(j)]
        served = worlds[k + 1][0] - base
        if served >= len(rest):
            rest, first_window = [], first_window + len(spans)
            continue
        j = served // size
        in_order = [p for step in arranged(j) for batch in step
                    for p in batch]
        rest = (sorted(in_order[served - spans[j][0]:]) +
                rest[spans[j][1]:])
        first_window += j + 1


def balance_figures(costs, steps, cost_model="padded", batch_tokens=0,
                    attention_length=0):
    """The figures of docs/balanced-batches.md "The figures" over `steps`
    (each a list of micro-batches of sample indices): a dict of steps,
    samples, p50, p99, max, padding and fill."""
    imbalances, padded, real, samples = [], 0, 0, 0
    micro_batches = sum(len(step) for step in steps)
    for step in steps:
        step_costs = [balance_cost([costs[i] for i in b], cost_model,
                                   attention_length) for b in step]
        total = sum(step_costs)
        imbalances.append(Fraction(1) if total == 0 else
                          Fraction(max(step_costs) * len(step), total))
        for b in step:
            padded += len(b) * max(costs[i] for i in b)
            real += sum(costs[i] for i in b)
            samples += len(b)
    if not imbalances:
        return dict(steps=0, samples=0, p50=0, p99=0, max=0, padding=0,
                    fill=0)
    ordered = sorted(imbalances)  # exact: Fraction
    largest = float(ordered[-1])

    def percentile(q):
        x = ordered[max(1, math.ceil(q * len(ordered))) - 1]
        if x >= 2:
            return largest
        return min(largest,
                   float(1 + Fraction(math.floor((x - 1) * 10000) + 1, 10000)))

    return dict(steps=len(steps), samples=samples, p50=percentile(0.5),
                p99=percentile(0.99), max=largest,
                padding=(padded - real) / padded if padded else 0,
                fill=real / (batch_tokens * micro_batches)
                if batch_tokens else 0)
