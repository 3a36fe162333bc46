#!/usr/bin/python3
"""accelerate_loop_script.py (a plain accelerate loop on balanced batches,
the loader not prepared by accelerate) under torchrun --rdzv-backend shard
with 2 workers over a real shardd: torchrun exits 0, accelerate's world is
the job's (2), the ranks end with identical parameters, and every sample of
each of the 2 epochs was trained exactly once across the ranks.
Exits 77 (skipped) where accelerate is not installed (Debian bookworm).
"""
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

from harness import (ShardDaemon, check, communicate_or_report,  # noqa: E402
                     exit_code, parse_args, torchrun_command, torchrun_env)

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "accelerate_loop_script.py")
SAMPLES = 997


def main():
    args = parse_args(__doc__.splitlines()[0])
    try:
        import accelerate  # noqa: F401
    except ImportError:
        print("accelerate is not installed: skipped")
        return 77
    work = tempfile.mkdtemp(prefix="shard-accelerate-")
    env = torchrun_env(args.python_dir)
    with ShardDaemon(args.bin_dir) as daemon:
        proc = subprocess.Popen(
            [*torchrun_command(), "--nnodes=1", "--nproc_per_node=2",
             f"--rdzv_endpoint={daemon.address}", "--rdzv_id=loop", SCRIPT,
             "--coordinator", daemon.address, "--job", "loop",
             "--record", os.path.join(work, "record-{rank}.txt")],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, start_new_session=True)
        out, _ = communicate_or_report(proc, 600)
    check(proc.returncode == 0,
          f"torchrun exits 0 (exit {proc.returncode}) {out[-1500:]}")
    ranks = re.findall(r"rank (\d) of (\d) \(accelerate (\d)\): params "
                       r"(-?\d+\.\d{10})", out)
    check(sorted((r, w, a) for r, w, a, _ in ranks) ==
          [("0", "2", "2"), ("1", "2", "2")],
          f"accelerate's world is the job's on both ranks {ranks}")
    check(len({params for *_, params in ranks}) == 1,
          f"identical parameters on both ranks {ranks}")
    by_epoch = collections.defaultdict(list)
    for path in glob.glob(os.path.join(work, "record-*.txt")):
        for line in open(path):
            epoch, index = map(int, line.split())
            by_epoch[epoch].append(index)
    for epoch in range(2):
        trained = by_epoch.get(epoch, [])
        check(sorted(trained) == list(range(SAMPLES)),
              f"epoch {epoch}: every one of {SAMPLES} samples trained "
              f"exactly once ({len(trained)} trained, {len(set(trained))} "
              f"distinct)")
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
