#!/usr/bin/python3
"""Locality benchmark: when does the block shuffle pay off?

Writes (unless --path is given) a synthetic record file larger than 1 GiB
with shard-records, then runs shard-record-locality-bench: rank 0 of W = 8
reads its epoch-0 records in the order of the torch shuffle, of the block
shuffle at several block and window sizes, and unshuffled, with the file's
pages dropped from the page cache before each order. Prints a Markdown
table: read time, MiB read from disk (/proc/self/io), and both as ratios to
the torch shuffle.

  tests/bench/run_record_locality_bench.py --bin-dir build/bin
      [--records 1100000] [--record-size 1020] [--path DIR] [--keep]
      [--blocks 64:16,256:16,1024:16,1024:64]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--records", type=int, default=1100000)
    parser.add_argument("--record-size", type=int, default=1020)
    parser.add_argument("--path")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--world-size", type=int, default=8)
    parser.add_argument("--blocks", default="64:16,256:16,1024:16,1024:64")
    args = parser.parse_args()

    path = args.path
    made = None
    if path is None:
        made = tempfile.mkdtemp(prefix="shard-locality-", dir="/var/tmp")
        path = made
        print(f"writing {args.records} records of {args.record_size} bytes "
              f"to {path} ...", file=sys.stderr, flush=True)
        subprocess.run([f"{args.bin_dir}/shard-records", "synthetic",
                        "--out", path, "--records", str(args.records),
                        "--record-size", str(args.record_size)], check=True)
    try:
        size = sum(os.path.getsize(os.path.join(path, f))
                   for f in os.listdir(path) if f.endswith(".rec"))
        out = subprocess.run(
            [f"{args.bin_dir}/shard-record-locality-bench", "--path", path,
             "--world-size", str(args.world_size), "--blocks", args.blocks],
            check=True, capture_output=True, text=True).stdout
        rows = [json.loads(line) for line in out.splitlines()]
    finally:
        if made and not args.keep:
            shutil.rmtree(made, ignore_errors=True)

    torch = rows[0]
    print(f"\nrank 0 of W={args.world_size}: {torch['records']} records of "
          f"{torch['record_bytes']} bytes from a {size / 2**30:.2f} GiB file, "
          f"page cache dropped before each order\n")
    print("| order | read time | ratio | MiB read from disk | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for row in rows:
        mib = row["disk_bytes"] / 2**20
        print(f"| {row['order']} | {row['seconds']:.2f} s | "
              f"{row['seconds'] / torch['seconds']:.3f} | {mib:.0f} | "
              f"{row['disk_bytes'] / max(torch['disk_bytes'], 1):.3f} |")


if __name__ == "__main__":
    main()
