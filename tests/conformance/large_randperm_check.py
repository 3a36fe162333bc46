#!/usr/bin/env python3
"""The plan against the installed torch's own DistributedSampler at sizes
each side of torch's randperm switch (N = 2^32 / 20 = 214,748,364: torch
>= 2.6 shuffles from there on with another algorithm).

Debian's python3-torch (1.13) has only the old algorithm; torch >= 2.6 is
the oracle of the new one. The job reproduces the installed torch
(`--torch-randperm 2.6` on torch >= 2.6, `legacy` before). For each size
(default: 214,748,363 and 214,748,364), epochs 0 and 1, ranks 0 and W-1
(W = 64, so the pad tail is exercised), `shardctl plan` must equal
DistributedSampler's shard (seed 7, drop_last=False). The shard is
computed with DistributedSampler's own steps on tensors (randperm with
the seed + epoch generator, padded by repeating its start, strided from
the rank), since its list of 2*10^8 Python ints would take about 8 GB.
About 6 GB of memory and a minute or two per size:

    python3 tests/conformance/large_randperm_check.py --bin-dir build/bin
        [--sizes 214748363,214748364]

Prints one line per comparison; exit status 0 when all match.
"""
import argparse
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from shardd_process import ShardDaemon  # noqa: E402

import torch  # noqa: E402

W, SEED = 64, 7
SWITCH = 214748364


def randperm_option():
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    return "2.6" if (major, minor) >= (2, 6) else "legacy"


def sampler_shard(n, epoch, rank):
    """DistributedSampler(shuffle=True, seed=SEED, drop_last=False)'s
    indices for `rank` in `epoch`, as a tensor."""
    g = torch.Generator()
    g.manual_seed(SEED + epoch)
    order = torch.randperm(n, generator=g)
    total = math.ceil(n / W) * W
    padding = total - n
    if padding:
        order = torch.cat([order, order[:padding]])
    return order[rank:total:W]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--sizes", default=f"{SWITCH - 1},{SWITCH}")
    args = parser.parse_args()
    shardctl = f"{args.bin_dir}/shardctl"
    algorithm = randperm_option()
    failures = 0
    with ShardDaemon(args.bin_dir, "--max-order-bytes", str(8 << 30)) as d:
        for n in (int(s) for s in args.sizes.split(",")):
            job = f"n{n}"
            subprocess.run([shardctl, "--coordinator", d.address, "create-job",
                            "--job", job, "--size", str(n), "--world-size",
                            str(W), "--seed", str(SEED), "--torch-randperm",
                            algorithm], check=True, capture_output=True)
            for epoch in (0, 1):
                for rank in (0, W - 1):
                    out = subprocess.run(
                        [shardctl, "--coordinator", d.address, "plan",
                         "--job", job, "--epoch", str(epoch), "--rank",
                         str(rank)],
                        check=True, capture_output=True, text=True).stdout
                    got = torch.tensor([int(x) for x in out.split()])
                    ok = torch.equal(got, sampler_shard(n, epoch, rank))
                    failures += not ok
                    print(f"{'ok  ' if ok else 'FAIL'} torch "
                          f"{torch.__version__} (--torch-randperm "
                          f"{algorithm}) N={n} W={W} epoch={epoch} "
                          f"rank={rank} ({got.numel()} indices)", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
