#!/usr/bin/python3
"""Where shard-train's CPU time goes: a real shardd and W shard-train ranks
(Fashion-MNIST CNN, the parity benchmark's settings, OMP_NUM_THREADS=1)
while `perf record -a -g` samples the machine for --seconds of steady
training. Prints two Markdown tables for the shard-train processes: the
share of samples per shared object (the kernel included) and the top
resolved functions with their callees ("children"; libtorch's kernels are
internal symbols, so each is counted under the exported ATen operator that
called it). Needs perf and permission to profile the whole machine
(root); without perf it says so and exits 77 (skipped).

  tests/bench/run_trainer_profile.py --bin-dir build/bin [--world-size 2]
      [--seconds 8] [--top 10]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# Exit status without perf (ctest's SKIP_RETURN_CODE).
SKIPPED = 77
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from shardd_process import ShardDaemon  # noqa: E402


def report(data, sort, children, top):
    """Top rows of the shard-train processes' samples sorted by `sort`
    ("dso" or "sym"), as (share, name). Filtered here rather than with
    --comm, which drops the kernel's samples from call-graph data."""
    out = subprocess.run(
        ["perf", "report", "-i", data, "--stdio", "-g", "none", "--sort",
         f"comm,{sort}", "--children" if children else "--no-children"],
        capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        fields = line.split()
        if line.startswith("#") or "%" not in line or len(fields) < 3:
            continue
        shares = 2 if children else 1
        if fields[shares] != "shard-train":
            continue
        name = " ".join(fields[shares + 1:])
        # Unresolved addresses (stripped internals, broken stacks) say
        # nothing.
        if re.search(r"0x[0-9a-f]{8,}|\] 0+$", name):
            continue
        rows.append((fields[0], name))
        if len(rows) == top:
            break
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--world-size", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    if shutil.which("perf") is None:
        print("perf is not installed (Debian: linux-perf): skipped",
              file=sys.stderr)
        return SKIPPED
    env = dict(os.environ, OMP_NUM_THREADS="1")
    with ShardDaemon(args.bin_dir) as daemon, \
            tempfile.TemporaryDirectory() as work:
        ranks = [subprocess.Popen(
            [f"{args.bin_dir}/shard-train", "--coordinator", daemon.address,
             "--job", "profile", "--member", f"m{rank}", "--world-size",
             str(args.world_size), "--seed", "0", "--dataset",
             "fashion-mnist", "--model", "cnn", "--epochs", "2",
             "--batch-size", "64", "--lr", "0.02", "--backend", "gloo",
             "--gloo-interface", "lo", "--eval-size", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=env) for rank in range(args.world_size)]
        # Past loading and the process group: wait for a rank's first line
        # after "resuming", then a little more.
        for line in ranks[0].stdout:
            if line.startswith("resuming"):
                break
        time.sleep(2)
        data = os.path.join(work, "perf.data")
        print(f"profiling {args.seconds:g} s of W={args.world_size} ...",
              file=sys.stderr, flush=True)
        subprocess.run(["perf", "record", "-a", "-g", "-F", "999", "-o", data,
                        "--", "sleep", str(args.seconds)],
                       capture_output=True, check=True)
        objects = report(data, "dso", False, args.top)
        functions = report(data, "sym", True, args.top)
        for rank in ranks:
            rank.kill()
            rank.wait()
    print(f"\nshard-train, W={args.world_size}: share of CPU samples\n")
    print("| shared object | share |")
    print("| --- | --- |")
    for share, name in objects:
        print(f"| {name} | {share} |")
    print("\n| function (with callees) | share |")
    print("| --- | --- |")
    for share, name in functions:
        print(f"| `{name}` | {share} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
