#!/usr/bin/python3
"""accelerate_loop_script.py (a plain accelerate loop on balanced batches,
the loader not prepared by accelerate) with 2 workers over a real shardd,
started by each of the two launchers a user has:
1. torchrun --rdzv-backend shard;
2. accelerate launch --multi_gpu --num_processes 2 --rdzv_backend shard
   (the coordinator's address and the run id given to torchrun through
   PET_RDZV_ENDPOINT and PET_RDZV_ID: accelerate passes no rendezvous
   endpoint for one machine; --multi_gpu is accelerate's torchrun launcher,
   the script trains on CPU).
3. torchrun again, the script passing the loader to accelerator.prepare
   too (the habit of accelerate's tutorials; it took every W-th of each
   rank's batches, silently).
For each: the launcher exits 0, accelerate's world is the job's (2), the
ranks end with identical parameters, every sample of each of the 2 epochs
was trained once across the ranks (and one again: the pad tail makes 997
samples 998 for 2 ranks), and the job's committed
progress is the end of the last epoch, although the main process makes
each commit 1 s after the other rank finished the epoch (the loop's
barrier after the commit keeps that rank from leaving the job first).
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
                     exit_code, installed, parse_args, torchrun_command,
                     torchrun_env)

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "accelerate_loop_script.py")
SAMPLES = 997


def launchers(address):
    """(name, the command before the script, extra environment, the
    script's extra arguments) of each run; each trains the job of its
    name."""
    def torchrun(run_id):
        return [*torchrun_command(), "--nnodes=1", "--nproc_per_node=2",
                f"--rdzv_endpoint={address}", f"--rdzv_id={run_id}"]
    return [
        ("torchrun", torchrun("torchrun"), {}, []),
        ("accelerate", ["accelerate", "launch", "--multi_gpu",
                        "--num_machines", "1", "--num_processes", "2",
                        "--rdzv_backend", "shard", "--main_process_port",
                        "0"],
         {"PET_RDZV_ENDPOINT": address, "PET_RDZV_ID": "accelerate"}, []),
        ("prepared", torchrun("prepared"), {}, ["--prepare-loader"]),
    ]


def check_run(name, proc, work, coordinator):
    out, _ = communicate_or_report(proc, 600)
    check(proc.returncode == 0,
          f"{name}: the launcher exits 0 (exit {proc.returncode})")
    if proc.returncode != 0:
        print(f"--- {name}'s output:\n{out[-8000:]}", flush=True)
    ranks = re.findall(r"rank (\d) of (\d) \(accelerate (\d)\): params "
                       r"(-?\d+\.\d{10})", out)
    check(sorted((r, w, a) for r, w, a, _ in ranks) ==
          [("0", "2", "2"), ("1", "2", "2")],
          f"{name}: accelerate's world is the job's on both ranks {ranks}")
    check(len({params for *_, params in ranks}) == 1,
          f"{name}: identical parameters on both ranks {ranks}")
    by_epoch = collections.defaultdict(list)
    for path in glob.glob(os.path.join(work, f"{name}-*.txt")):
        for line in open(path):
            epoch, index = map(int, line.split())
            by_epoch[epoch].append(index)
    for epoch in range(2):
        trained = by_epoch.get(epoch, [])
        # The pad tail makes 997 a multiple of 2: one sample again.
        check(sorted(set(trained)) == list(range(SAMPLES)) and
              len(trained) == SAMPLES + 1,
              f"{name}: epoch {epoch}: every one of {SAMPLES} samples "
              f"trained once, and one again: the pad tail's "
              f"({len(trained)} trained, {len(set(trained))} distinct)")
    import shard
    with shard.Client(coordinator) as client:
        job = client.get_job(name)
    check((job.committed_epoch, job.committed_position) == (2, 0),
          f"{name}: the last epoch's commit landed (committed epoch "
          f"{job.committed_epoch} position {job.committed_position})")


def main():
    args = parse_args(__doc__.splitlines()[0])
    if not installed("accelerate"):
        return 77
    work = tempfile.mkdtemp(prefix="shard-accelerate-")
    with ShardDaemon(args.bin_dir) as daemon:
        for name, launcher, extra_env, extra_args in launchers(
                daemon.address):
            env = torchrun_env(args.python_dir)
            env.update(extra_env)
            proc = subprocess.Popen(
                [*launcher, SCRIPT, "--coordinator", daemon.address,
                 "--job", name,
                 "--record", os.path.join(work, name + "-{rank}.txt"),
                 "--commit-delay", "1", *extra_args],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True, start_new_session=True, cwd=work)
            check_run(name, proc, work, daemon.address)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
