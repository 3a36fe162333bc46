#!/usr/bin/python3
"""client/python/examples/train_ddp.py over a real shardd.

1. Three processes that know only the coordinator's address train with
   DistributedDataParallel (Gloo through CoordinatorStore): all exit 0, end
   with identical parameters, each trained exactly DistributedSampler's
   indices of every epoch, and the uneven evaluation saw every held-out
   sample once.
2. The three are SIGKILLed (each its process group) mid-epoch after at least one commit and started
   again: they resume from the committed position and its checkpoint, and
   the committed history (the first run up to the commit, then the second
   run) holds every index of every epoch exactly once.
Exit status 0 when every check passes.
"""
import glob
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "client", "python", "examples",
                       "train_ddp.py")
from harness import (ShardDaemon, check, communicate_or_report,  # noqa: E402
                     exit_code, parse_args)
from training_records import (check_committed_histories,  # noqa: E402
                              check_planned, read_records)

WORLD = 3


def start(python_dir, address, job, size, epochs, work, attempt):
    env = {**os.environ, "PYTHONPATH": python_dir}
    return [subprocess.Popen(
        [sys.executable, EXAMPLE, "--coordinator", address, "--job", job,
         "--world-size", str(WORLD), "--member", f"worker-{i}",
         "--dataset-size", str(size), "--epochs", str(epochs),
         "--checkpoint-dir", work,
         "--record", os.path.join(work, f"record-{attempt}-{i}.txt")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)  # a process group each: see the kill below
        for i in range(WORLD)]


def finish(procs, daemon):
    outputs = []
    deadline = time.monotonic() + 240
    for proc in procs:
        out, _ = communicate_or_report(
            proc, max(1.0, deadline - time.monotonic()), also=[daemon.pid])
        outputs.append(out)
        check(proc.returncode == 0,
              f"trainer exits 0 (exit {proc.returncode}) {out[-400:]}")
    return outputs


def records(work, attempt):
    """(epoch, rank) -> indices in training order, for one attempt."""
    return read_records(os.path.join(work, f"record-{attempt}-*.txt"))


def main():
    args = parse_args(__doc__.splitlines()[0])
    import shard

    with ShardDaemon(args.bin_dir) as daemon:
        # 1. A whole run.
        size, epochs = 3000, 2
        work = tempfile.mkdtemp(prefix="shard-ddp-")
        outputs = finish(start(args.python_dir, daemon.address, "whole",
                               size, epochs, work, 0), daemon)
        params = {re.search(r"params (\S+)", out).group(1)
                  for out in outputs if "params" in out}
        check(len(params) == 1, f"identical parameters on every rank "
              f"{sorted(params)}")
        check(all("eval samples 301 " in out for out in outputs),
              "the uneven evaluation saw each of 301 samples once")
        check_planned(check, records(work, 0), size, WORLD, epochs)

        # 2. Killed mid-epoch, resumed.
        size = 30000
        work = tempfile.mkdtemp(prefix="shard-ddp-kill-")
        procs = start(args.python_dir, daemon.address, "killed", size,
                      epochs, work, 1)
        give_up = time.monotonic() + 300
        while (not glob.glob(os.path.join(work, "ckpt-0-*.pt")) and
               time.monotonic() < give_up):
            time.sleep(0.05)
        time.sleep(0.2)  # Train past the commit: that work must be redone.
        # As a pod's or torchrun's kill does: the trainer's process group,
        # its DataLoader workers with it (on Python 3.14 those are children
        # of a forkserver that would outlive the trainer alone, holding its
        # pipes open).
        for proc in procs:
            os.killpg(proc.pid, signal.SIGKILL)
        for proc in procs:
            proc.communicate()
        job = shard.Client(daemon.address).get_job("killed")
        committed = (job.committed_epoch, job.committed_position)
        check(committed[0] == 0 and 0 < committed[1] < size,
              f"killed mid-epoch 0 after a commit at {committed}")
        finish(start(args.python_dir, daemon.address, "killed", size, epochs,
                     work, 2), daemon)
        check_committed_histories(check, records(work, 1), records(work, 2),
                                  committed, WORLD, epochs, size)

    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
