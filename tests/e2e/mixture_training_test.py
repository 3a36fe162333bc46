#!/usr/bin/python3
"""End to end: shard-train on a mixture of record files, the worked example
of docs/mixtures.md (Fashion-MNIST, each class a source, re-weighted).

1. `shard-records fashion-mnist --by-class` writes one dataset per class:
   every class's records are exactly the training images of that label, in
   the idx order.
2. Two shard-train ranks (Gloo) train on the 10 sources (shirt weight 3,
   pullover 2, the others 1; epoch size 13,000) for 2 epochs: identical
   parameter checksums; each rank trained exactly its planned indices
   (`shardctl plan`); the job's per-epoch counts are the independent
   reference's (tests/conformance/mixture_reference.py); each rank's
   "trained per source" line equals its logged indices counted by source
   and `shardctl plan --by-source`, and the ranks' lines add up to the
   plan; the evaluation covers the 10,000 test images, accuracy > 0.6.
3. Refusals: the sources in another order than the job's (exit 1,
   FAILED_PRECONDITION, before waiting for a world), a missing source file
   (exit 1, NOT_FOUND naming the source), --source with --dataset
   fashion-mnist (exit 2).
Exit 77 (skipped) when the dataset package is absent.
"""
import bisect
import os
import re
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from shardd_process import ShardDaemon  # noqa: E402
import mixture_reference as reference  # noqa: E402
from real_data_test import (FASHION_MNIST, check, read_idx,  # noqa: E402
                            read_records, run, run_checks, trainer)
from trainer_processes import finish, plan, read_log, start_trainers  # noqa: E402,E501

CLASSES = ["tshirt", "trouser", "pullover", "dress", "coat", "sandal",
           "shirt", "sneaker", "bag", "boot"]
WEIGHTS = {"shirt": 3.0, "pullover": 2.0}
EPOCH_SIZE = 13000
EPOCHS = 2
WORLD = 2


def write_classes(bin_dir, work):
    out = os.path.join(work, "fm")
    proc = run([f"{bin_dir}/shard-records", "fashion-mnist", "--out", out,
                "--by-class"])
    check(proc.returncode == 0, f"shard-records --by-class exits 0 "
          f"{proc.stderr.strip()}")
    images = read_idx(f"{FASHION_MNIST}/train-images-idx3-ubyte.gz")
    labels = read_idx(f"{FASHION_MNIST}/train-labels-idx1-ubyte.gz")
    sizes = []
    for label, name in enumerate(CLASSES):
        records = read_records(os.path.join(out, "classes", name))
        mine = images[labels == label].reshape(-1, 784)
        check(records.shape == (len(mine), 785) and
              np.all(records[:, 0] == label) and
              np.array_equal(records[:, 1:], mine),
              f"classes/{name}: the {len(mine)} training images of label "
              f"{label}, in order")
        sizes.append(len(records))
    return out, sizes


def source_flags(data):
    flags = []
    for name in CLASSES:
        flags += ["--source", f"{name}:{data}/classes/{name}:weight="
                  f"{WEIGHTS.get(name, 1.0)}"]
    return flags


def per_source(line_text):
    return {name: int(count) for name, count in
            re.findall(r"(\w+)=(\d+)", line_text)}


def check_plan_and_tallies(bin_dir, address, text, logs, sizes):
    sources = [(name, size, "weight", WEIGHTS.get(name, 1.0))
               for name, size in zip(CLASSES, sizes)]
    planned = dict(zip(CLASSES, reference.counts(sources, EPOCH_SIZE)))
    announced = re.findall(r"mixture job=mix epoch_size=(\d+) per epoch: "
                           r"(.*)", text)
    check(len(announced) == WORLD and
          all(int(e) == EPOCH_SIZE and per_source(p) == planned
              for e, p in announced),
          f"every rank announces the reference's counts {planned}")
    ends = list(np.cumsum(sizes))
    logged = {}
    for log in logs:
        logged.update(read_log(log))
    tallies = re.findall(r"epoch (\d+) rank=(\d+) trained per source: (.*)",
                         text)
    check(len(tallies) == WORLD * EPOCHS, f"a per-source line per rank and "
          f"epoch ({len(tallies)})")
    totals = {}
    for epoch, rank, counts in tallies:
        epoch, rank, counts = int(epoch), int(rank), per_source(counts)
        got = logged.get((epoch, rank), [])
        check(got == plan(bin_dir, address, "mix", epoch, rank),
              f"epoch {epoch} rank {rank} trained exactly its {len(got)} "
              f"planned indices")
        from_log = {name: 0 for name in CLASSES}
        for index in got:
            from_log[CLASSES[bisect.bisect_right(ends, index)]] += 1
        by_source = run([f"{bin_dir}/shardctl", "--coordinator", address,
                         "plan", "--job", "mix", "--epoch", str(epoch),
                         "--rank", str(rank), "--by-source"]).stdout
        check(counts == from_log == {
            name: int(n) for name, n in
            re.findall(r"source (\w+): (\d+)", by_source)},
              f"epoch {epoch} rank {rank}: its per-source line equals its "
              f"log and plan --by-source")
        for name, count in counts.items():
            totals[(epoch, name)] = totals.get((epoch, name), 0) + count
    check(all(totals.get((e, name)) == planned[name]
              for e in range(EPOCHS) for name in CLASSES),
          "the ranks' per-source counts add up to the plan in every epoch")


def train_mixture(bin_dir, address, data, sizes, work):
    logs = [os.path.join(work, f"mix-{r}.log") for r in range(WORLD)]
    cmds = [trainer(bin_dir, address, "mix", f"mix-{r}",
                    ["--world-size", str(WORLD), *source_flags(data),
                     "--epoch-size", str(EPOCH_SIZE), "--data-path", data,
                     "--epochs", str(EPOCHS), "--log-indices", logs[r]])
            for r in range(WORLD)]
    outputs = finish(start_trainers(cmds, work, "mix"), timeout=600)
    ok = all(rc == 0 for rc, _ in outputs)
    check(ok, "every trainer exits 0")
    text = "\n".join(t for _, t in outputs)
    if not ok:
        print(text[-3000:])
        return
    check(len(set(re.findall(r"param_checksum=(\w+)", text))) == 1,
          "identical parameter checksums")
    check_plan_and_tallies(bin_dir, address, text, logs, sizes)
    evals = re.findall(r"eval rank=\d+ local_samples=\d+ samples=(\d+) "
                       r"unique=(\d+) accuracy=([\d.]+)", text)
    check(len(evals) == WORLD and all(s == u == "10000" for s, u, _ in evals)
          and float(evals[0][2]) > 0.6,
          f"evaluation covers the 10000 test images, accuracy > 0.6 {evals}")


def refusals(bin_dir, address, data):
    reordered = []
    for name in reversed(CLASSES):
        reordered += ["--source", f"{name}:{data}/classes/{name}"]
    proc = run(trainer(bin_dir, address, "mix", "late", reordered),
               timeout=60)
    check(proc.returncode == 1 and "FAILED_PRECONDITION" in proc.stderr and
          "has the sources" in proc.stderr,
          f"sources in another order are refused before the join "
          f"({proc.stderr.strip()[-200:]})")
    proc = run(trainer(bin_dir, address, "gone", "a",
                       ["--world-size", "1", "--source",
                        f"web:{data}/classes/nothing"]), timeout=60)
    check(proc.returncode == 1 and "NOT_FOUND" in proc.stderr and
          "source web" in proc.stderr,
          f"a missing source file names the source ({proc.stderr.strip()})")
    proc = run(trainer(bin_dir, address, "x", "a",
                       ["--dataset", "fashion-mnist", "--source",
                        f"bag:{data}/classes/bag"]), timeout=60)
    check(proc.returncode == 2 and "--source" in proc.stderr,
          "--source with --dataset fashion-mnist: a usage error")


def mixture_checks(bin_dir, work):
    data, sizes = write_classes(bin_dir, work)
    with ShardDaemon(bin_dir) as daemon:
        train_mixture(bin_dir, daemon.address, data, sizes, work)
        refusals(bin_dir, daemon.address, data)


if __name__ == "__main__":
    sys.exit(run_checks(__doc__.splitlines()[0], "shard-mixture-training-",
                        mixture_checks))
