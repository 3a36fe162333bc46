#!/usr/bin/python3
"""shard.costs: per-sample costs that follow a transformer's step time.

1. fit_from_times recovers d of seconds = a*B*L*(1 + L/d) from exact
   times (d = 300 and 2000), and math.inf from linear times.
2. fit_attention_length times each shape once to warm up, then `repeats`
   times, at count = tokens // length, and fits the same d.
3. attention_costs: ceil(L + L^2/d) as uint32, the lengths for d = inf.
4. Refusals (ValueError): one length only, a time that is not positive, a
   non-positive length, a cost past 32 bits, a negative length.
5. On a real torch model (one TransformerEncoderLayer, CPU) the measured d
   is a positive number (or inf).
Exit status 0 when every check passes.
"""
import math
import sys

from harness import check, exit_code, expect_error, parse_args


def synthetic(d, a=2e-9):
    calls = []

    def step_seconds(count, length):
        calls.append((count, length))
        return a * count * length * (1 + length / d)
    return step_seconds, calls


def fits():
    from shard.costs import fit_attention_length, fit_from_times
    shapes = [(64, 64), (32, 128), (16, 256), (8, 512)]
    for d in (300.0, 2000.0):
        step_seconds, _ = synthetic(d)
        got = fit_from_times(shapes, [step_seconds(*s) for s in shapes])
        check(abs(got - d) < 1e-6 * d, f"exact times give d = {d} ({got})")
    linear = [1e-9 * count * length for count, length in shapes]
    check(fit_from_times(shapes, linear) == math.inf,
          "linear times give d = inf")
    step_seconds, calls = synthetic(700.0)
    got = fit_attention_length(step_seconds, lengths=(64, 256, 1024),
                               tokens=4096, repeats=2)
    check(abs(got - 700.0) < 1e-6 * 700.0,
          f"fit_attention_length measures d = 700 ({got})")
    check(calls == [(64, 64)] * 3 + [(16, 256)] * 3 + [(4, 1024)] * 3,
          f"one warm-up and 2 timed runs per shape at tokens // length "
          f"({calls})")


def costs():
    import numpy as np
    from shard.costs import attention_costs
    got = attention_costs([0, 100, 300], 300.0)
    check(got.dtype == np.uint32 and got.tolist() == [0, 134, 600],
          f"ceil(L + L^2/d) as uint32 ({got.tolist()})")
    check(attention_costs([5, 9], math.inf).tolist() == [5, 9],
          "d = inf: the lengths")


def refusals():
    from shard.costs import (attention_costs, fit_attention_length,
                             fit_from_times)
    expect_error("one length only", ValueError,
                 lambda: fit_from_times([(4, 64), (8, 64)], [1.0, 2.0]))
    expect_error("a time of 0", ValueError,
                 lambda: fit_from_times([(4, 64), (2, 128)], [0.0, 1.0]))
    expect_error("a NaN time", ValueError,
                 lambda: fit_from_times([(4, 64), (2, 128)],
                                        [float("nan"), 1.0]))
    expect_error("a length of 0", ValueError,
                 lambda: fit_attention_length(lambda c, l: 1.0,
                                              lengths=(0, 64)))
    expect_error("a cost past 32 bits", ValueError,
                 lambda: attention_costs([1 << 20], 1.0))
    expect_error("a negative length", ValueError,
                 lambda: attention_costs([-1, 4], 10.0))


def real_model():
    import time

    import torch
    from shard.costs import fit_attention_length
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 2, 128, batch_first=True)

    def step_seconds(count, length):
        x = torch.randn(count, length, 64)
        began = time.perf_counter()
        layer(x).sum().backward()
        seconds = time.perf_counter() - began
        layer.zero_grad(set_to_none=True)
        return seconds
    d = fit_attention_length(step_seconds, lengths=(32, 64, 128, 256),
                             tokens=2048, repeats=2)
    check(d > 0, f"a real encoder layer measures d = {d:.0f}")


def main():
    parse_args(__doc__.splitlines()[0], bin_dir_required=False)
    fits()
    costs()
    refusals()
    real_model()
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
