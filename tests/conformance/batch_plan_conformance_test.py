#!/usr/bin/python3
"""Conformance of balanced batches: the planning code (through
shard-batch-plan) gives exactly the steps of the independent reference of
docs/balanced-batches.md (batch_plan_reference.py), and the plan keeps the
promises the docs make whatever the reference says: every step has one
non-empty micro-batch per rank, every sample of the epoch is served once
(the pad tail adds at most W - 1 repeats, the drop tail leaves out at most
W - 1 samples), no micro-batch costs more than the budget (but a single
sample over it), and the steps are not in cost order.
The epoch's balance figures (shard-batch-plan --balance, the code shardctl
plan --balance and the coordinator use) equal the docs' rule for them.

Cases: fixed counts and token budgets, both cost models, worlds 1..64,
windows from 16 samples (many windows, final runs and absorbed steps) to
the whole epoch, both tails, epochs smaller than the world, equal costs,
zero costs and costs near 2^32, packed sequences (first-fit-decreasing:
bimodal lengths, samples over the budget). Resized epochs: a world serves part of
the epoch and a world of another size the rest (once, twice, at a
window's end, in a padded last window, at the epoch's end, with either
tail); every world's steps equal the reference's, and the worlds together
serve every sample once. Exit 0 when every case holds.
"""
import argparse
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import batch_plan_reference as reference  # noqa: E402


def lognormal_costs(n, rng, sigma=1.0, high=1024):
    return [max(16, min(high, int(rng.lognormvariate(5, sigma))))
            for _ in range(n)]


def cases():
    rng = random.Random(7)
    long_tail = lognormal_costs(3000, rng, sigma=1.6, high=16384)
    yield "tokens padded W=8", lognormal_costs(5000, rng), dict(
        world=8, batch_tokens=4096)
    yield "tokens sum W=3 window 500", lognormal_costs(4001, rng), dict(
        world=3, batch_tokens=2000, cost_model="sum", window=500)
    yield "size padded W=4 window 64", lognormal_costs(1003, rng), dict(
        world=4, batch_size=5, window=64)
    yield "size sum W=64", lognormal_costs(9000, rng), dict(
        world=64, batch_size=8, cost_model="sum", seed=3, epoch=5)
    yield "tokens tiny window W=5", lognormal_costs(777, rng), dict(
        world=5, batch_tokens=1500, window=16)
    yield "long tail W=16", long_tail, dict(world=16, batch_tokens=20000)
    yield "budget below costs W=2", lognormal_costs(300, rng), dict(
        world=2, batch_tokens=10)
    yield "W=1", lognormal_costs(1000, rng), dict(world=1, batch_tokens=3000)
    yield "pad N<W", [5, 9, 1], dict(world=8, batch_size=2)
    yield "drop N<W", [5, 9, 1], dict(world=8, batch_size=2, tail="drop")
    yield "drop short last window", lognormal_costs(1000 + 3, rng), dict(
        world=8, batch_tokens=4096, window=200, tail="drop")
    yield "equal costs", [100] * 2500, dict(world=7, batch_tokens=1000)
    yield "zero costs", [0] * 50 + [3] * 50, dict(world=4, batch_tokens=8)
    yield "costs near 2^32", [2**32 - 1 - i for i in range(40)], dict(
        world=4, batch_tokens=2**33, cost_model="sum")
    # Samples that fill the budget alone: whole steps of one sample each.
    for model in ("padded", "sum"):
        for tail in ("pad", "drop"):
            yield "over T/2 %s %s W=4" % (model, tail), [60] * 37, dict(
                world=4, batch_tokens=100, cost_model=model, tail=tail)
    yield "over T/2 W=6 windows of 102", [3000] * 1000, dict(
        world=6, batch_tokens=4096, window=100)
    yield "around T/2 W=5", [40 + (i * 37) % 90 for i in range(1234)], dict(
        world=5, batch_tokens=100, cost_model="sum", window=80)
    # Packed sequences: first-fit-decreasing fills long samples' gaps.
    bimodal = [rng.choice((rng.randint(64, 511), rng.randint(1536, 3071)))
               for _ in range(6000)]
    yield "packed bimodal W=8", bimodal, dict(
        world=8, batch_tokens=4096, cost_model="sum", seed=4)
    yield "packed long tail over T W=16", long_tail, dict(
        world=16, batch_tokens=4096, cost_model="sum", window=700,
        tail="drop")
    yield "packed zero costs W=4", [0] * 50 + [3] * 50, dict(
        world=4, batch_tokens=8, cost_model="sum")
    # The default window sized by the costs' mean (4.5): about 932,000
    # samples, the whole epoch, where 65,536 made two windows.
    small = [rng.randint(1, 8) for _ in range(100000)]
    yield "default window by the mean W=4", small, dict(
        world=4, batch_tokens=4096, cost_model="sum")
    # Two budgets: T caps tokens, steps balanced by L + L^2 / d.
    yield "time cost d=2048 W=8", lognormal_costs(5000, rng, high=4096), dict(
        world=8, batch_tokens=8192, cost_model="sum", attention_length=2048,
        seed=2)
    yield "time cost d=1 near 2^32 W=4", [2**32 - 1 - i for i in range(40)], \
        dict(world=4, batch_tokens=2**33, cost_model="sum",
             attention_length=1)
    yield "time cost bimodal W=16 window 900", bimodal, dict(
        world=16, batch_tokens=4096, cost_model="sum", attention_length=512,
        window=900, tail="drop")


def resize_cases():
    """(name, costs, params, [(world, fraction of its steps served)]):
    each world serves that fraction of its steps, then the next one the
    rest; the last one's fraction is unused."""
    rng = random.Random(11)
    yield "resize 8->3 mid-window", lognormal_costs(5000, rng), dict(
        batch_tokens=4096, window=500), [(8, 0.3), (3, 1)]
    yield "resize 4->6->2 fixed count", lognormal_costs(1003, rng), dict(
        batch_size=4, window=64), [(4, 0.25), (6, 0.5), (2, 1)]
    yield "resize sum 2->16", lognormal_costs(3000, rng), dict(
        batch_tokens=3000, cost_model="sum", seed=9, epoch=2), [
            (2, 0.6), (16, 1)]
    yield "resize at a window's end", lognormal_costs(2000, rng), dict(
        batch_size=5, window=500), [(4, 0.5), (5, 1)]
    # 2 ranks serve 128 of 131 (64 steps of 65); 8 get the 3 left, padded.
    yield "resize pads the rest", lognormal_costs(131, rng), dict(
        batch_size=1, window=64), [(2, 0.99), (8, 1)]
    yield "resize drop 8->5", lognormal_costs(1003, rng), dict(
        batch_tokens=4096, window=200, tail="drop"), [(8, 0.7), (5, 1)]
    yield "resize time cost 4->7", lognormal_costs(2500, rng), dict(
        batch_tokens=4096, cost_model="sum", attention_length=256,
        window=400), [(4, 0.45), (7, 1)]
    yield "resize at the epoch's end", lognormal_costs(400, rng), dict(
        batch_tokens=2000), [(4, 1.0), (2, 1)]


def run_resized(tool, costs, params, worlds):
    """Runs the worlds one after another; returns the samples each served
    (in order) and the steps and params of the last one."""
    served, resizes, base = [], [], 0
    for k, (world, fraction) in enumerate(worlds):
        step_params = dict(params, world=worlds[0][0], resizes=resizes)
        got = run_tool(tool, costs, step_params)
        expected = reference.plan(costs, **step_params)
        if got != expected:
            return None, "world %d differs from the reference" % k
        if k + 1 == len(worlds):
            served.extend(i for step in got for b in step for i in b)
            return served, None
        cut = max(1, int(len(got) * fraction))
        served_now = [i for step in got[:cut] for b in step for i in b]
        served.extend(served_now)
        base += len(served_now)
        resizes = resizes + [(base, worlds[k + 1][0])]


def resize_promises(costs, params, worlds, served):
    n = len(costs)
    most = sum(world for world, _ in worlds)
    extra = len(served) - n
    if params.get("tail") == "drop":
        if len(set(served)) != len(served) or not -most < extra <= 0:
            return ["drop: served %d of %d" % (len(served), n)]
    elif sorted(set(served)) != list(range(n)) or not 0 <= extra < most:
        return ["pad: served %d of %d, %d distinct" %
                (len(served), n, len(set(served)))]
    return []


def run_tool(tool, costs, params, *extra):
    with tempfile.NamedTemporaryFile(suffix=".u32") as file:
        file.write(struct.pack("<%dI" % len(costs), *costs))
        file.flush()
        command = [tool, "--costs", file.name, "--world",
                   str(params["world"])]
        for flag in ("batch_size", "batch_tokens", "cost_model", "window",
                     "seed", "epoch", "tail", "attention_length"):
            if flag in params:
                command += ["--" + flag.replace("_", "-"), str(params[flag])]
        for base, world in params.get("resizes", ()):
            command += ["--resize", "%d:%d" % (base, world)]
        command += list(extra)
        out = subprocess.run(command, check=True, capture_output=True,
                             text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def promises(costs, params, steps):
    """What the docs promise of any plan; returns the broken promises."""
    world = params["world"]
    n = len(costs)
    broken = []
    served = [i for step in steps for batch in step for i in batch]
    if any(len(step) != world or not all(step) for step in steps):
        broken.append("a step without one non-empty micro-batch per rank")
    extra = len(served) - n
    if params.get("tail") == "drop":
        if len(set(served)) != len(served) or not -world < extra <= 0:
            broken.append("drop: served %d of %d" % (len(served), n))
    elif sorted(set(served)) != list(range(n)) or not 0 <= extra < world:
        broken.append("pad: served %d of %d, %d distinct" %
                      (len(served), n, len(set(served))))
    budget = params.get("batch_tokens")
    if budget:
        model = params.get("cost_model", "padded")
        # A hard cap: only a single sample may cost more.
        over = [b for step in steps for b in step if len(b) > 1 and
                reference.batch_cost([costs[i] for i in b], model) > budget]
        if over:
            broken.append("%d micro-batches over the budget" % len(over))
    step_costs = [max(costs[i] for b in step for i in b) for step in steps]
    if (len(set(step_costs)) > 8 and
            step_costs == sorted(step_costs, reverse=True)):
        broken.append("steps in cost order")
    return broken


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bin-dir", required=True)
    args = parser.parse_args()
    tool = os.path.join(args.bin_dir, "shard-batch-plan")
    failures = 0
    for name, costs, params in cases():
        got = run_tool(tool, costs, params)
        expected = reference.plan(costs, **params)
        problems = promises(costs, params, got)
        if got != expected:
            problems.append("differs from the reference (%d vs %d steps)" %
                            (len(got), len(expected)))
        figures = run_tool(tool, costs, params, "--balance")[0]
        written = reference.balance_figures(
            costs, got, params.get("cost_model", "padded"),
            params.get("batch_tokens", 0), params.get("attention_length", 0))
        if any(abs(figures[k] - written[k]) > 1e-12 for k in written):
            problems.append("figures %s, the docs' rule gives %s" %
                            (figures, written))
        print("%-28s %5d steps  %s" % (name, len(got),
                                       "; ".join(problems) or "ok"))
        failures += bool(problems)
    for name, costs, params, worlds in resize_cases():
        served, problem = run_resized(tool, costs, params, worlds)
        problems = [problem] if problem else resize_promises(
            costs, params, worlds, served)
        print("%-28s %5d served  %s" % (name, len(served or []),
                                        "; ".join(problems) or "ok"))
        failures += bool(problems)
    print("%d case(s) failed" % failures if failures else "all cases match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
