#!/usr/bin/python3
"""client/python/examples/train_ddp.py under torchrun, over a real shardd.

torchrun is started as docs/user-guide.md "torchrun" says: its rendezvous
through the coordinator (--rdzv-backend shard: plain torchrun where torch
loads the package's entry point, `python3 -m shard.torchrun` on torch 1.13,
which also needs --redirects 2 --tee 2), with no MASTER_ADDR/MASTER_PORT of
the user's:
1. Two workers (--nnodes 1 --nproc_per_node 2): each sampler's rank is
   torchrun's RANK (the coordinator granted the requested rank), nobody is
   warned about a rank mismatch, torchrun exits 0, the ranks end with
   identical parameters and each trained exactly DistributedSampler's
   indices of every epoch.
2. One worker SIGKILLed mid-epoch after a commit (--max_restarts 1):
   torchrun restarts the world, the workers re-join, resume from the
   committed position, torchrun exits 0, and the committed history (the
   first attempt up to the commit, then the restarted one) holds every
   index of every epoch exactly once.
2b. Two nodes of one worker on this host, with the default member ids of
   their agents and workers: both torchruns exit 0, no agent fails torch's
   exit barrier, and the ranks train DistributedSampler's indices.
2c. Two nodes, the coordinator restarted mid-run: both torchruns exit 0
   and torch's exit barrier passes (no "Error waiting on exit barrier").
3. A script written for torch's DistributedSampler with only the user guide's
   two-line migration (plain_migration_script.py: its own
   dist.init_process_group, DataLoader worker processes, set_epoch, a
   snapshot per epoch, no commits): one worker SIGKILLed mid-epoch, torchrun
   (--max_restarts 2) restarts the world, which forms from the two new
   processes only (never with the dead one's membership), torchrun exits 0
   and the restarted world trains exactly DistributedSampler's indices of
   every epoch from its snapshot on.
4. Bad --rdzv-conf values are refused naming the setting.
--nproc N runs N workers instead of 2 (1 on a machine with one GPU: NCCL
refuses two ranks on one device); --only killed-worker runs part 2 alone
(tests/gpu/run.sh). The example trains on CUDA with NCCL where torch sees
a GPU.
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
PLAIN_SCRIPT = os.path.join(HERE, "plain_migration_script.py")
from harness import (ShardDaemon, check, communicate_or_report,  # noqa: E402
                     exit_code, parse_args, torchrun_command, torchrun_env)
from training_records import (check_committed_histories,  # noqa: E402
                              check_planned, planned, read_records)

WORLD = 2


def start_torchrun(python_dir, address, run_id, max_restarts,
                   script_and_args, nodes=1):
    env = torchrun_env(python_dir)
    per_node = WORLD // nodes
    return subprocess.Popen(
        [*torchrun_command(), f"--nnodes={nodes}",
         f"--nproc_per_node={per_node}", f"--rdzv_endpoint={address}",
         f"--rdzv_id={run_id}", "--redirects", "2", "--tee", "2",
         "--max_restarts", str(max_restarts), *script_and_args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)


def torchrun(python_dir, address, job, size, epochs, work):
    return start_torchrun(python_dir, address, job, 1, [
        EXAMPLE, "--coordinator", address, "--job", job,
        "--dataset-size", str(size), "--epochs", str(epochs),
        "--loader-workers", "0", "--checkpoint-dir", work,
        "--record", os.path.join(work, "record-{restart}-{member}.txt")])


def kill_one_worker(proc):
    """SIGKILLs torchrun's last worker process."""
    workers = subprocess.run(["pgrep", "-P", str(proc.pid)],
                             capture_output=True, text=True).stdout.split()
    check(len(workers) == WORLD, f"torchrun runs {WORLD} workers "
          f"({workers})")
    if workers:
        os.kill(int(workers[-1]), signal.SIGKILL)


def plain_migration_survives_a_restart(python_dir, address):
    size, epochs = 40000, 3
    work = tempfile.mkdtemp(prefix="shard-torchrun-plain-")
    snapshot = os.path.join(work, "snapshot.pt")
    proc = start_torchrun(python_dir, address, "plain", 2, [
        PLAIN_SCRIPT, "--coordinator", address, "--job", "plain",
        "--dataset-size", str(size), "--epochs", str(epochs),
        "--snapshot", snapshot,
        "--record", os.path.join(work, "record-{restart}-{rank}.txt")])
    give_up = time.monotonic() + 300
    # Mid-epoch 1: after the first snapshot, some way into the epoch.
    while time.monotonic() < give_up and (
            not os.path.exists(snapshot) or
            len(records(work, 0).get((1, 0), [])) < size // WORLD // 4):
        time.sleep(0.05)
    kill_one_worker(proc)
    out, _ = communicate_or_report(proc, 240)
    check(proc.returncode == 0,
          f"the migrated script recovers from a killed worker: torchrun exits "
          f"0 (exit {proc.returncode}) {out[-1500:]}")
    check("AbortedError" not in out, "no worker fails on an ended generation")
    resumed = re.findall(r"resuming from snapshot at epoch (\d+)", out)
    check(len(resumed) == WORLD and len(set(resumed)) == 1,
          f"both restarted workers resume from the snapshot {resumed}")
    if resumed:
        got = read_records(os.path.join(work, "record-1-*.txt"))
        for epoch in range(int(resumed[0]), epochs):
            for rank in range(WORLD):
                check(got[(epoch, rank)] == planned(size, WORLD, epoch, rank),
                      f"after the restart rank {rank} trains exactly "
                      f"DistributedSampler's indices of epoch {epoch}")


def records(work, restart):
    """(epoch, rank) -> indices in training order, for one attempt."""
    return read_records(os.path.join(work, f"record-{restart}-*.txt"))


def check_ranks_follow_torchrun(out, restarts):
    joined = re.findall(r"rank (\d+) of (\d+): member \S+ \(RANK=(\d+)\)", out)
    check(len(joined) == WORLD * (restarts + 1) and
          all(rank == torchrun_rank and world == str(WORLD)
              for rank, world, torchrun_rank in joined),
          f"each sampler's rank is torchrun's RANK {joined}")
    check("asked for rank" not in out, "no rank-mismatch warning")


def add_arguments(parser):
    parser.add_argument("--nproc", type=int, default=WORLD)
    parser.add_argument("--only", choices=["killed-worker"])


def main():
    global WORLD
    args = parse_args(__doc__.splitlines()[0], add_arguments)
    WORLD = args.nproc
    if args.only is None:
        rdzv_conf_refusals()
    with ShardDaemon(args.bin_dir) as daemon:
        if args.only is None:
            whole_run(args.python_dir, daemon.address)
        killed_worker(args.python_dir, daemon.address)
        if args.only is None:
            two_nodes(args.python_dir, daemon.address)
            restarted_coordinator(args.python_dir, daemon)
            # 3. The two-line migration of a script that forms its own group.
            plain_migration_survives_a_restart(args.python_dir,
                                               daemon.address)
    return exit_code()


def whole_run(python_dir, address):
    """1. A whole run."""
    size, epochs = 2000, 2
    work = tempfile.mkdtemp(prefix="shard-torchrun-")
    proc = torchrun(python_dir, address, "whole", size, epochs, work)
    out, _ = communicate_or_report(proc, 240)
    check(proc.returncode == 0,
          f"torchrun exits 0 (exit {proc.returncode}) {out[-600:]}")
    check_ranks_follow_torchrun(out, restarts=0)
    params = set(re.findall(r"params (-?\d+\.\d{10})", out))
    check(len(params) == 1,
          f"identical parameters on every rank {sorted(params)}")
    check_planned(check, records(work, 0), size, WORLD, epochs)


def two_nodes(python_dir, address):
    """2b. Two nodes of one worker, their rendezvous through the
    coordinator; both agents on this host, with the default member ids (the
    host name alone made each agent's join evict the other's)."""
    size, epochs = 2000, 2
    work = tempfile.mkdtemp(prefix="shard-torchrun-nodes-")
    procs = [start_torchrun(python_dir, address, "nodes", 0, [
        EXAMPLE, "--coordinator", address, "--job", "nodes",
        "--dataset-size", str(size), "--epochs", str(epochs),
        "--loader-workers", "0", "--checkpoint-dir", work,
        "--record", os.path.join(work, "record-{restart}-{member}.txt")],
        nodes=WORLD) for name in "ab"]
    out = ""
    for proc in procs:
        text, _ = communicate_or_report(proc, 240)
        check(proc.returncode == 0, f"each node's torchrun exits 0 "
              f"(exit {proc.returncode}) {text[-600:]}")
        out += text
    check_ranks_follow_torchrun(out, restarts=0)
    check("Error waiting on exit barrier" not in out,
          "no agent fails torch's exit barrier after a run that succeeded "
          "(no node leaves the round before every node is done)")
    params = set(re.findall(r"params (-?\d+\.\d{10})", out))
    check(len(params) == 1,
          f"identical parameters on both nodes {sorted(params)}")
    check_planned(check, records(work, 0), size, WORLD, epochs)


def restarted_coordinator(python_dir, daemon):
    """2c. Two nodes, the coordinator killed and restarted (same address
    and data directory) mid-run: the run succeeds, and torch's exit
    barrier passes although the restart lost the round's store keys (the
    agents renew the round)."""
    size, epochs = 20000, 2
    work = tempfile.mkdtemp(prefix="shard-torchrun-restart-")
    address = daemon.address
    procs = [start_torchrun(python_dir, address, "restarted", 0, [
        EXAMPLE, "--coordinator", address, "--job", "restarted",
        "--dataset-size", str(size), "--epochs", str(epochs),
        "--loader-workers", "0", "--checkpoint-dir", work,
        "--record", os.path.join(work, "record-{restart}-{member}.txt")],
        nodes=WORLD) for _ in range(2)]
    give_up = time.monotonic() + 300
    while (not glob.glob(os.path.join(work, "ckpt-0-*.pt")) and
           time.monotonic() < give_up):
        time.sleep(0.05)
    daemon.kill()
    daemon.restart()
    out = ""
    for proc in procs:
        text, _ = communicate_or_report(proc, 240)
        check(proc.returncode == 0, f"each node's torchrun exits 0 after "
              f"the coordinator's restart (exit {proc.returncode}) "
              f"{text[-600:]}")
        out += text
    check("Error waiting on exit barrier" not in out,
          "torch's exit barrier passes after the coordinator's restart")


def rdzv_conf_refusals():
    """4. --rdzv-conf values are checked as the project's options are: a
    bad join_timeout or an empty setting is a ValueError naming it."""
    from torch.distributed.elastic.rendezvous import RendezvousParameters
    from shard.torch.rendezvous import create_handler, default_agent_id
    for conf, named in (({"join_timeout": "-5"}, "join_timeout=-5"),
                        ({"join_timeout": "010"}, "join_timeout=010"),
                        ({"join_timeout": "99999999999999999999"},
                         "join_timeout=99999999999999999999"),
                        ({"join_timeout": "0"}, "join_timeout=0"),
                        ({"member": ""}, "member= is empty")):
        params = RendezvousParameters("shard", "127.0.0.1:7070", "run", 1, 1,
                                      **conf)
        try:
            create_handler(params)
            refused = ""
        except ValueError as error:
            refused = str(error)
        check(named in refused, f"--rdzv-conf {conf} is refused naming it "
              f"({refused!r})")
    params = RendezvousParameters("shard", "127.0.0.1:7070", "run", 1, 1,
                                  join_timeout="30")
    check(create_handler(params) is not None,
          "--rdzv-conf join_timeout=30 is taken")
    check(default_agent_id().endswith(f"-{os.getpid()}"),
          f"an agent's default id names its process ({default_agent_id()})")


def killed_worker(python_dir, address):
    """2. One worker killed mid-epoch: torchrun restarts the world."""
    size, epochs = 20000, 2
    work = tempfile.mkdtemp(prefix="shard-torchrun-kill-")
    proc = torchrun(python_dir, address, "killed", size, epochs, work)
    give_up = time.monotonic() + 300
    while (not glob.glob(os.path.join(work, "ckpt-0-*.pt")) and
           time.monotonic() < give_up):
        time.sleep(0.05)
    time.sleep(0.3)  # Train past the commit: that work must be redone.
    kill_one_worker(proc)
    out, _ = communicate_or_report(proc, 240)
    check(proc.returncode == 0,
          f"torchrun restarts the world and exits 0 "
          f"(exit {proc.returncode}) {out[-600:]}")
    check_ranks_follow_torchrun(out, restarts=1)
    resumed = re.findall(r"resuming epoch (\d+) at position (\d+)", out)
    check(len(resumed) == WORLD and len(set(resumed)) == 1,
          f"every restarted worker resumes at the commit {resumed}")
    if resumed:
        committed = tuple(map(int, resumed[0]))
        check_committed_histories(check, records(work, 0), records(work, 1),
                                  committed, WORLD, epochs, size)


if __name__ == "__main__":
    sys.exit(main())
