#!/usr/bin/env python3
"""Checks the torch >= 2.6 large-N randperm branch against the installed torch.

torch >= 2.6 shuffles n >= 2^32 / 20 elements with a different algorithm
than smaller n. Debian's python3-torch (1.13) predates it, so ctest cannot
use it as an oracle; run this by hand where torch >= 2.6 is installed
(about 12 GB of memory, a minute):

    python3 tests/conformance/large_randperm_check.py --bin-dir build/bin

It starts shardd, creates a job with N = 2^28 (above the switch point) and
`--torch-randperm 2.6`, and compares ranks 0 and W-1 of epochs 0 and 1
(`shardctl plan`) with torch.randperm(N, generator=manual_seed(seed + epoch))
[rank::W], which is DistributedSampler's shard when W divides N.
Exit status 0 when all match.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from shardd_process import ShardDaemon  # noqa: E402

import torch  # noqa: E402

N, W, SEED = 1 << 28, 64, 7


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    args = parser.parse_args()
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    if (major, minor) < (2, 6):
        print(f"torch {torch.__version__} < 2.6: nothing to check against")
        return 77
    shardctl = f"{args.bin_dir}/shardctl"
    failures = 0
    with ShardDaemon(args.bin_dir, "--max-order-bytes", str(8 << 30)) as d:
        subprocess.run([shardctl, "--coordinator", d.address, "create-job",
                        "--job", "big", "--size", str(N), "--world-size",
                        str(W), "--seed", str(SEED), "--torch-randperm",
                        "2.6"], check=True)
        for epoch in (0, 1):
            g = torch.Generator()
            g.manual_seed(SEED + epoch)
            order = torch.randperm(N, generator=g)
            for rank in (0, W - 1):
                out = subprocess.run(
                    [shardctl, "--coordinator", d.address, "plan", "--job",
                     "big", "--epoch", str(epoch), "--rank", str(rank)],
                    check=True, capture_output=True, text=True).stdout
                got = torch.tensor([int(x) for x in out.split()])
                ok = torch.equal(got, order[rank::W])
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} torch {torch.__version__} "
                      f"N={N} W={W} epoch={epoch} rank={rank} "
                      f"({got.numel()} indices)", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
