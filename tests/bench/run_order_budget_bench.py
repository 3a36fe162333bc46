#!/usr/bin/python3
"""The order cache under a memory budget: --jobs jobs of N = --size created
at once on a shardd started with --order-cache-bytes, each streamed in full
by its own client (rank 0 of W = 1) at the same time. Reports the
coordinator's peak RSS (VmHWM) against the budget, the evictions, the wall
time, and whether every stream's checksum equals the order computed locally
(shard-randperm-bench, bit-exact with torch.randperm).

  tests/bench/run_order_budget_bench.py --bin-dir build/bin
      [--jobs 20] [--size 1e8] [--budget-gib 2]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from shardd_process import ShardDaemon  # noqa: E402


def metric(address, name):
    text = urllib.request.urlopen(f"http://{address}/metrics",
                                  timeout=10).read().decode()
    match = re.search(rf"^{name} ([\d.e+]+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else None


def vm_hwm_mib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--size", default="1e8")
    parser.add_argument("--budget-gib", type=float, default=2)
    args = parser.parse_args()
    n = int(float(args.size))
    budget = int(args.budget_gib * 2**30)

    print(f"expected orders of {args.jobs} seeds ...", file=sys.stderr,
          flush=True)
    expected = []
    for seed in range(args.jobs):
        out = subprocess.run(
            [f"{args.bin_dir}/shard-randperm-bench", "--sizes", str(n),
             "--repeats", "1", "--seed", str(seed), "--variant", "legacy"],
            check=True, capture_output=True, text=True).stdout
        expected.append(json.loads(out)["checksum"])

    with ShardDaemon(args.bin_dir, "--order-cache-bytes", str(budget),
                     "--metrics-listen", "127.0.0.1:0") as daemon:
        ctl = [f"{args.bin_dir}/shardctl", "--coordinator", daemon.address]
        began = time.monotonic()
        for seed in range(args.jobs):
            subprocess.run(ctl + ["create-job", "--job", f"j{seed}", "--size",
                                  str(n), "--world-size", "1", "--seed",
                                  str(seed)], check=True,
                           capture_output=True)
        clients = [subprocess.Popen(
            [f"{args.bin_dir}/shard-sampler-bench", "--coordinator",
             daemon.address, "--job", f"j{seed}", "--world-size", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for seed in range(args.jobs)]
        results = []
        for proc in clients:
            out, err = proc.communicate(timeout=3600)
            if proc.returncode != 0:
                results.append({"error": err.strip()})
            else:
                results.append(json.loads(out.strip().splitlines()[-1]))
        wall = time.monotonic() - began
        peak = vm_hwm_mib(daemon.pid)
        evictions = metric(daemon.metrics_address,
                           "shard_order_cache_evictions_total")

    exact = sum(1 for r, e in zip(results, expected)
                if r.get("checksum") == e and r.get("indices") == n)
    errors = [r["error"] for r in results if "error" in r]
    order_mib = n * 4 / 2**20
    print(f"\n{args.jobs} jobs of N = {n:.0e} ({order_mib:.0f} MiB orders), "
          f"created at once, streamed at once, --order-cache-bytes "
          f"{budget / 2**30:.1f} GiB\n")
    print("| streams with the exact order | coordinator peak RSS | budget | "
          "peak - budget | evictions | wall time |")
    print("| --- | --- | --- | --- | --- | --- |")
    print(f"| {exact} of {args.jobs} | {peak:.0f} MiB | "
          f"{budget / 2**20:.0f} MiB | {peak - budget / 2**20:+.0f} MiB | "
          f"{evictions:.0f} | {wall:.0f} s |")
    for error in errors[:3]:
        print(f"error: {error}")


if __name__ == "__main__":
    main()
