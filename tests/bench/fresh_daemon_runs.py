"""Runs a coordinator benchmark client once per size, each time against a
fresh shardd (durable state in a temporary data directory), and collects
the JSON line each run prints, with how long the coordinator core's lock
was held per call over the run (from its metrics). Shared by the load
benchmark runners."""
import json
import math
import os
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                "conformance"))
from shardd_process import ShardDaemon  # noqa: E402


def rss_mib(pid):
    """The resident memory of process `pid` (VmRSS), in MiB; NaN if it
    cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return math.nan


def add_daemon_arguments(parser):
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--shardd-dir", help="directory of the shardd to run "
                        "(default: --bin-dir; e.g. an older build, for a "
                        "side-by-side comparison with the same client)")
    parser.add_argument("--lease", help="shardd --lease (default: its own; "
                        "benchmark members that never heartbeat need a long "
                        "one at 100,000)")


def run_per_size(args, client, size_flag, sizes, extra=(), timeout=900):
    """For each size: a fresh shardd (with --lease when given), then
    `client` (a binary in --bin-dir) with --coordinator, --coordinator-pid,
    --<size_flag> SIZE and `extra`. Returns the parsed results; exits 1 if a
    run fails."""
    results = []
    for size in sizes:
        print(f"{size_flag} = {size} ...", file=sys.stderr, flush=True)
        with ShardDaemon(args.shardd_dir or args.bin_dir, "--metrics-listen",
                         "127.0.0.1:0",
                         *(("--lease", args.lease) if args.lease else ())) \
                as daemon:
            out = subprocess.run(
                [f"{args.bin_dir}/{client}", "--coordinator", daemon.address,
                 "--coordinator-pid", str(daemon.pid), f"--{size_flag}",
                 str(size), *extra],
                capture_output=True, text=True, timeout=timeout)
            if out.returncode != 0:
                print(out.stderr, file=sys.stderr)
                sys.exit(1)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            result.update(core_lock_holds(daemon.metrics_address))
            print(json.dumps(result), file=sys.stderr, flush=True)
            results.append(result)
    return results


def core_lock_holds(metrics_address):
    """p50, p99 (the upper bound of the histogram bucket holding them), max
    of the core's lock hold times, in ms, and how many holds lasted over
    1 ms and over 5 ms; NaN from a shardd that does not export them (an
    older build)."""
    text = urllib.request.urlopen(f"http://{metrics_address}/metrics",
                                  timeout=10).read().decode()
    buckets, maximum = [], math.nan
    for line in text.splitlines():
        if line.startswith("shard_core_lock_hold_seconds_bucket"):
            bound = line.split('le="')[1].split('"')[0]
            buckets.append((float(bound), float(line.split()[-1])))
        elif line.startswith("shard_core_lock_hold_max_seconds "):
            maximum = float(line.split()[-1]) * 1000

    def quantile(q):
        if not buckets or buckets[-1][1] == 0:
            return math.nan
        for bound, cumulative in buckets:
            if cumulative >= q * buckets[-1][1]:
                return bound * 1000
        return math.inf

    def over(seconds):
        within = [cumulative for bound, cumulative in buckets
                  if bound == seconds]
        return buckets[-1][1] - within[0] if within else math.nan

    return {"lock_p50_ms": quantile(0.5), "lock_p99_ms": quantile(0.99),
            "lock_max_ms": maximum, "lock_over_1ms": over(0.001),
            "lock_over_5ms": over(0.005),
            "lock_holds": buckets[-1][1] if buckets else 0}
