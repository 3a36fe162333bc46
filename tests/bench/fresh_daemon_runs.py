"""Runs a coordinator benchmark client once per size, each time against a
fresh shardd (durable state in a temporary data directory), and collects
the JSON line each run prints. Shared by the load benchmark runners."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                "conformance"))
from shardd_process import ShardDaemon  # noqa: E402


def add_daemon_arguments(parser):
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--shardd-dir", help="directory of the shardd to run "
                        "(default: --bin-dir; e.g. an older build, for a "
                        "side-by-side comparison with the same client)")


def run_per_size(args, client, size_flag, sizes, extra=(), timeout=900):
    """For each size: a fresh shardd, then `client` (a binary in --bin-dir)
    with --coordinator, --coordinator-pid, --<size_flag> SIZE and `extra`.
    Returns the parsed results; exits 1 if a run fails."""
    results = []
    for size in sizes:
        print(f"{size_flag} = {size} ...", file=sys.stderr, flush=True)
        with ShardDaemon(args.shardd_dir or args.bin_dir) as daemon:
            out = subprocess.run(
                [f"{args.bin_dir}/{client}", "--coordinator", daemon.address,
                 "--coordinator-pid", str(daemon.pid), f"--{size_flag}",
                 str(size), *extra],
                capture_output=True, text=True, timeout=timeout)
            if out.returncode != 0:
                print(out.stderr, file=sys.stderr)
                sys.exit(1)
            result = json.loads(out.stdout.strip().splitlines()[-1])
            print(json.dumps(result), file=sys.stderr, flush=True)
            results.append(result)
    return results
