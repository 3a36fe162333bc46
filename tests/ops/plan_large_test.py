#!/usr/bin/python3
"""shardctl plan works for every job the server accepts.

For FEISTEL and block-shuffle jobs of N = 2^62 (the largest dataset size
shardd accepts), where every index takes 9 bytes on the wire, `shardctl
plan` streams more than two pages of rank 0's epoch 0 without an error, and
the indices read are all below N and distinct. The output is cut after 1.7
million lines (the whole shard has 2^61).
Exit status 0 when every check passes.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                "conformance"))
from shardd_process import ShardDaemon  # noqa: E402

N = 2 ** 62
LINES = 1_700_000
RESULTS = {"passed": 0, "failed": 0}


def check(condition, what):
    RESULTS["passed" if condition else "failed"] += 1
    print(("ok      " if condition else "FAILED  ") + what, flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    args = parser.parse_args()
    shardctl = f"{args.bin_dir}/shardctl"
    with ShardDaemon(args.bin_dir) as daemon:
        for algorithm, extra in [("feistel", []),
                                 ("block", ["--block-size", "4096"])]:
            job = f"huge-{algorithm}"
            subprocess.run(
                [shardctl, "--coordinator", daemon.address, "create-job",
                 "--job", job, "--size", str(N), "--world-size", "2",
                 "--shuffle-algorithm", algorithm, *extra],
                check=True, capture_output=True, timeout=60)
            plan = subprocess.Popen(
                [shardctl, "--coordinator", daemon.address, "plan", "--job",
                 job, "--epoch", "0", "--rank", "0"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            indices = []
            for line in plan.stdout:
                indices.append(int(line))
                if len(indices) == LINES:
                    break
            plan.kill()
            _, err = plan.communicate(timeout=60)
            check(len(indices) == LINES,
                  f"{algorithm} N=2^62: plan printed {len(indices)} lines "
                  f"(stderr {err.strip()[:200]!r})")
            check(all(i < N for i in indices) and
                  len(set(indices)) == len(indices),
                  f"{algorithm}: indices below N and distinct")
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
