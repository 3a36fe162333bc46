#!/usr/bin/python3
"""End to end on real data: Fashion-MNIST through shard-records and
shard-train (Gloo on CPU).

1. shard-records converts the Debian idx files into 3 record files per
   split; every record equals the idx data (label, pixels); `inspect
   --verify` passes; a truncated copy and a flipped byte are clear errors
   naming the file and the offset (exit 1, never a crash).
2. Two shard-train ranks train the CNN on the first 6,000 training images
   for 1 epoch: identical parameter checksums, each rank trained exactly its
   planned indices, the uneven evaluation covers the 10,000 test images
   exactly once on every rank, accuracy well above chance (> 0.6).
3. The same through the record files (--dataset records), one rank.
4. The job spec: a job created with `shardctl create-job --seed 7 --tail
   drop` is joined by a trainer stating the same spec, and refused
   (FAILED_PRECONDITION) to one stating the defaults; a later trainer
   joining without a spec trains and evaluates (the first left the
   evaluation job); one whose data size differs from the job's is refused.
Exit 77 (skipped) when the dataset package is absent.
"""
import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                "conformance"))
from shardd_process import ShardDaemon  # noqa: E402
from trainer_processes import finish, plan, read_log, start_trainers  # noqa: E402,E501

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"
RESULTS = {"passed": 0, "failed": 0}
HEADER = 64


def check(condition, what):
    RESULTS["passed" if condition else "failed"] += 1
    print(("ok   " if condition else "FAIL ") + what, flush=True)


def run(cmd, **kwargs):
    return subprocess.run([str(c) for c in cmd], capture_output=True,
                          text=True, **kwargs)


def read_idx(path):
    data = gzip.open(path).read()
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big")
            for i in range(data[3])]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * len(dims)).reshape(dims)


def read_records(directory):
    """All records of a directory of *.rec files, in global order."""
    chunks = []
    for name in sorted(os.listdir(directory)):
        raw = open(os.path.join(directory, name), "rb").read()
        size = int.from_bytes(raw[12:16], "little")
        count = int.from_bytes(raw[16:24], "little")
        body = np.frombuffer(raw, np.uint8, offset=HEADER)
        chunks.append(body.reshape(count, size + 4)[:, :size])
    return np.concatenate(chunks)


def converter_round_trip(bin_dir, work):
    out = os.path.join(work, "records")
    proc = run([f"{bin_dir}/shard-records", "fashion-mnist", "--out", out,
                "--shards", "3"])
    check(proc.returncode == 0, f"shard-records fashion-mnist exits 0 "
          f"{proc.stderr.strip()}")
    for split, stem in (("train", "train"), ("test", "t10k")):
        images = read_idx(f"{FASHION_MNIST}/{stem}-images-idx3-ubyte.gz")
        labels = read_idx(f"{FASHION_MNIST}/{stem}-labels-idx1-ubyte.gz")
        records = read_records(os.path.join(out, split))
        check(len(os.listdir(os.path.join(out, split))) == 3 and
              records.shape == (len(labels), 785) and
              np.array_equal(records[:, 0], labels) and
              np.array_equal(records[:, 1:],
                             images.reshape(len(labels), 784)),
              f"{split}: {len(records)} records equal the idx labels and "
              f"pixels")
    proc = run([f"{bin_dir}/shard-records", "inspect",
                os.path.join(out, "test"), "--verify"])
    check(proc.returncode == 0 and "verified 10000 records" in proc.stdout,
          "inspect --verify reads every test record")

    damaged = os.path.join(work, "damaged")
    shutil.copytree(os.path.join(out, "test"), damaged)
    first = os.path.join(damaged, sorted(os.listdir(damaged))[0])
    with open(first, "r+b") as f:
        f.seek(HEADER + 5 * 789 + 100)
        byte = f.read(1)
        f.seek(HEADER + 5 * 789 + 100)
        f.write(bytes([byte[0] ^ 0xFF]))
    proc = run([f"{bin_dir}/shard-records", "inspect", damaged,
                "--verify"])
    check(proc.returncode == 1 and
          f"{first}: offset {HEADER + 5 * 789}" in proc.stderr and
          "DATA_LOSS" in proc.stderr,
          f"a flipped byte: exit 1 naming the file and offset "
          f"({proc.stderr.strip()})")
    os.truncate(first, os.path.getsize(first) - 7)
    proc = run([f"{bin_dir}/shard-records", "inspect", damaged])
    check(proc.returncode == 1 and first in proc.stderr and
          "truncated" in proc.stderr and "offset" in proc.stderr,
          f"a truncated file: exit 1 naming the file and offset "
          f"({proc.stderr.strip()})")
    return out


def trainer(bin_dir, address, job, member, extra):
    return [f"{bin_dir}/shard-train", "--coordinator", address, "--job", job,
            "--member", member, "--backend", "gloo", "--gloo-interface", "lo",
            "--pg-timeout", "120s", "--batch-size", "32", "--lr", "0.05",
            *extra]


def train(cmds, work, tag):
    return finish(start_trainers(cmds, work, tag), timeout=600)


def check_training(bin_dir, address, job, world, outputs, logs, tag):
    ok = all(rc == 0 for rc, _ in outputs)
    check(ok, f"{tag}: every trainer exits 0")
    if not ok:
        for _, text in outputs:
            print(text[-3000:])
        return
    text = "\n".join(t for _, t in outputs)
    checksums = set(re.findall(r"param_checksum=(\w+)", text))
    check(len(checksums) == 1, f"{tag}: identical parameter checksums "
          f"{checksums}")
    logged = {}
    for log in logs:  # a member's rank is the coordinator's choice
        logged.update(read_log(log))
    for rank in range(world):
        got = logged.get((0, rank), [])
        check(got == plan(bin_dir, address, job, 0, rank),
              f"{tag}: rank {rank} trained exactly its {len(got)} planned "
              f"indices")
    evals = re.findall(r"eval rank=\d+ local_samples=\d+ samples=(\d+) "
                       r"unique=(\d+) accuracy=([\d.]+)", text)
    check(len(evals) == world and
          all(s == "10000" and u == "10000" for s, u, _ in evals),
          f"{tag}: evaluation covers the 10000 test images once on every "
          f"rank {evals}")
    accuracy = float(evals[0][2]) if evals else 0.0
    check(accuracy > 0.6, f"{tag}: accuracy {accuracy:.4f} > 0.6 (chance "
          f"0.1)")
    waits = re.findall(r"index_wait_s=([\d.]+)", text)
    check(len(waits) == world, f"{tag}: the epoch lines report the index "
          f"wait {waits}")


def spec_checks(bin_dir, address, work):
    ctl = [f"{bin_dir}/shardctl", "--coordinator", address]
    run(ctl + ["create-job", "--job", "spec", "--size", "500",
               "--world-size", "1", "--seed", "7", "--tail", "drop"],
        check=True)
    common = ["--dataset-size", "500", "--epochs", "1"]
    refused = run(trainer(bin_dir, address, "spec", "a",
                          ["--world-size", "1", *common]), timeout=120)
    check(refused.returncode == 1 and "FAILED_PRECONDITION" in refused.stderr,
          f"the default spec is refused for a seed-7/drop job "
          f"({refused.stderr.strip()[:160]})")
    evaluated = ["--eval-size", "50"]
    same = run(trainer(bin_dir, address, "spec", "b",
                       ["--world-size", "1", "--seed", "7", "--tail", "drop",
                        *common, *evaluated]), timeout=120)
    check(same.returncode == 0, f"the same spec joins, trains and evaluates "
          f"({same.stderr.strip()[-200:]})")
    # A later trainer of the same job evaluates too: the first one left the
    # evaluation job when it was done.
    joined = run(trainer(bin_dir, address, "spec", "c",
                         [*common, *evaluated]), timeout=120)
    check(joined.returncode == 0 and "samples=50 unique=50" in joined.stdout,
          f"no spec: joins the existing job, trains and evaluates "
          f"({joined.stderr.strip()[-200:]})")
    mismatch = run(trainer(bin_dir, address, "spec", "d",
                           ["--dataset", "fashion-mnist", "--dataset-size",
                            "600", "--eval-size", "0"]), timeout=120)
    check(mismatch.returncode == 1 and
          "FAILED_PRECONDITION" in mismatch.stderr and
          "dataset_size 500" in mismatch.stderr,
          f"a data size unlike the job's is refused "
          f"({mismatch.stderr.strip()[:200]})")
    bad = run(trainer(bin_dir, address, "spec", "e", ["--seed", "7"]),
              timeout=60)
    check(bad.returncode == 2 and "--world-size" in bad.stderr,
          "spec flags without --world-size: a usage error")


def run_checks(description, prefix, checks):
    """The test's main: checks(bin_dir, work) in a fresh directory; exit 77
    (skipped) without the dataset, 1 when a check failed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--bin-dir", required=True)
    args = parser.parse_args()
    if not os.path.isdir(FASHION_MNIST):
        print(f"skipped: {FASHION_MNIST} is absent (install the Debian "
              "package dataset-fashion-mnist)")
        return 77
    work = tempfile.mkdtemp(prefix=prefix)
    try:
        checks(args.bin_dir, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


def real_data_checks(bin_dir, work):
    records = converter_round_trip(bin_dir, work)
    with ShardDaemon(bin_dir) as daemon:
        logs = [os.path.join(work, f"fm-{r}.log") for r in range(2)]
        cmds = [trainer(bin_dir, daemon.address, "fm", f"fm-{r}",
                        ["--world-size", "2", "--dataset", "fashion-mnist",
                         "--dataset-size", "6000", "--epochs", "1",
                         "--log-indices", logs[r]])
                for r in range(2)]
        check_training(bin_dir, daemon.address, "fm", 2,
                       train(cmds, work, "fm"), logs, "fashion-mnist W=2")
        log = os.path.join(work, "rec-0.log")
        cmd = trainer(bin_dir, daemon.address, "rec", "rec-0",
                      ["--world-size", "1", "--dataset", "records",
                       "--data-path", records, "--dataset-size", "3000",
                       "--epochs", "1", "--log-indices", log])
        check_training(bin_dir, daemon.address, "rec", 1,
                       train([cmd], work, "rec"), [log], "records W=1")
        spec_checks(bin_dir, daemon.address, work)


if __name__ == "__main__":
    sys.exit(run_checks(__doc__.splitlines()[0], "shard-real-data-",
                        real_data_checks))
