#!/usr/bin/python3
"""End to end: shardd + real shard-train processes (Gloo on CPU).

1. 2 and 3 trainers: loss goes down, every rank ends with the same
   parameter checksum, each rank trained exactly its planned indices of each
   epoch (so the union is the epoch's plan), and the uneven evaluation saw
   every held-out sample exactly once. They ran without --checkpoint-dir:
   a next run with --epochs 3 resumes at the committed epoch 2.
2. Coordinator crash loop: 3 trainers train 2 epochs while the coordinator
   is SIGKILLed and restarted (same port, same data directory) at random
   moments, at least 5 times; the trainers ride through, and each rank
   trained exactly its planned indices of each epoch.
3. Elastic: a trainer of 3 is SIGKILLed mid-epoch and the other 2 go on
   after its lease expires; 2 trainers grow to 4 at a commit point. The
   committed history (reconstructed from each attempt's generation, rank,
   world size and resume point) covers every index exactly once, plus
   exactly the padding the final layout adds.
4. Crash and resume: 3 trainers (--loader-workers 2, so batches are
   assembled ahead of the training loop) checkpoint every few steps; one is
   SIGKILLed mid-epoch, the rest are killed too, all restart from the
   checkpoint. The committed history of the epoch (what each rank trained
   before the committed position, plus everything after the restart) holds
   every index exactly once.
--backend nccl --world W --only crash runs part 4 alone with that backend
and world size, for 2 epochs (tests/gpu/run.sh: shard-train with NCCL on a
GPU machine); epoch 1, trained after the restart, holds every index once.
Prints "N passed, N failed".
"""
import argparse
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..",
                                "conformance"))
from shardd_process import ShardDaemon  # noqa: E402
from trainer_processes import finish, plan, read_log, start_trainers  # noqa: E402,E501

RESULTS = {"passed": 0, "failed": 0}
# --backend: the process group of every shard-train this test starts.
BACKEND = {"name": "gloo"}


def check(condition, what):
    RESULTS["passed" if condition else "failed"] += 1
    print(("ok   " if condition else "FAIL ") + what, flush=True)


def trainer_cmd(bin_dir, address, job, member, world, size, work, extra=(),
                eval_size=101):
    return [f"{bin_dir}/shard-train", "--coordinator", address, "--job", job,
            "--member", member, "--world-size", str(world),
            "--dataset-size", str(size), "--backend", BACKEND["name"],
            "--gloo-interface", "lo", "--eval-size", str(eval_size),
            "--log-indices", os.path.join(work, f"{member}.log"),
            "--pg-timeout", "60s", *extra]


def merge(*logs):
    merged = {}
    for log in logs:
        for key, values in log.items():
            merged.setdefault(key, []).extend(values)
    return merged


def train_and_verify(bin_dir, address, world, size, epochs, work):
    os.makedirs(work, exist_ok=True)
    job = f"train-w{world}"
    members = [f"{job}-m{i}" for i in range(world)]
    cmds = [trainer_cmd(bin_dir, address, job, m, world, size, work,
                        ["--epochs", str(epochs), "--batch-size", "16",
                         "--lr", "0.05", "--progress-every", "10ms"])
            for m in members]
    outputs = finish(start_trainers(cmds, work, job))
    check(all(rc == 0 for rc, _ in outputs),
          f"W={world}: every trainer exits 0")
    if not all(rc == 0 for rc, _ in outputs):
        for rc, text in outputs:
            print(text[-2000:])
        return
    text = "\n".join(t for _, t in outputs)
    checksums = set(re.findall(r"param_checksum=(\w+)", text))
    check(len(checksums) == 1 and
          len(re.findall(r"param_checksum=", text)) == world,
          f"W={world}: identical parameter checksums on all ranks {checksums}")
    summaries = re.findall(r"summary rank=\d+ epochs=(\d+) steps=\d+ "
                           r"samples=(\d+) train_seconds=", text)
    check(len(summaries) == world and
          all(int(e) == epochs for e, _ in summaries) and
          sum(int(n) for _, n in summaries) >= size * epochs,
          f"W={world}: each rank ends with a summary line {summaries}")
    progress = re.findall(r"progress rank=\d+ epoch=\d+/%d step=\d+ "
                          r"position=\d+/\d+ \([\d.]+%%\) "
                          r"world_samples_per_s=\d+ eta=\S+" % epochs, text)
    check(len(progress) > 0,
          f"W={world}: --progress-every 10ms prints progress lines "
          f"({len(progress)})")
    losses = {}
    for epoch, loss in re.findall(r"epoch (\d+) rank=0 .* loss=([\d.]+)",
                                  text):
        losses[int(epoch)] = float(loss)
    check(len(losses) == epochs and losses[epochs - 1] < losses[0],
          f"W={world}: loss goes down {losses}")
    logged = merge(*(read_log(os.path.join(work, f"{m}.log"))
                     for m in members))
    for epoch in range(epochs):
        ok = all(logged.get((epoch, r), []) ==
                 plan(bin_dir, address, job, epoch, r) for r in range(world))
        check(ok, f"W={world}: epoch {epoch}: each rank trained exactly its "
                  f"planned indices")
    evals = re.findall(r"eval rank=\d+ local_samples=\d+ samples=(\d+) "
                       r"unique=(\d+)", text)
    check(len(evals) == world and
          all(s == "101" and u == "101" for s, u in evals),
          f"W={world}: uneven eval gathered 101 samples, none duplicated "
          f"{evals[:1]}")


def next_run_resumes_without_checkpoints(bin_dir, address, world, size,
                                         work):
    """The trainers of train_and_verify ran 2 epochs without
    --checkpoint-dir: their progress is committed all the same, so a run
    with --epochs 3 trains epoch 2 only."""
    job = f"train-w{world}"
    members = [f"{job}-m{i}" for i in range(world)]
    before = merge(*(read_log(os.path.join(work, f"{m}.log"))
                     for m in members))
    outputs = finish(start_trainers(
        [trainer_cmd(bin_dir, address, job, m, world, size, work,
                     ["--epochs", "3", "--batch-size", "16"])
         for m in members], work, job + "-more"))
    check(all(rc == 0 for rc, _ in outputs),
          f"W={world}: a third epoch's trainers exit 0")
    text = "\n".join(t for _, t in outputs)
    resumed = re.findall(r"resuming rank=\d+ epoch=(\d+) position=(\d+)", text)
    check(resumed == [("2", "0")] * world,
          f"W={world}: without --checkpoint-dir the next run resumes at the "
          f"committed epoch 2 {resumed}")
    after = merge(*(read_log(os.path.join(work, f"{m}.log"))
                    for m in members))
    check(all(after.get((e, r)) == before.get((e, r))
              for e in (0, 1) for r in range(world)) and
          all(after.get((2, r), []) == plan(bin_dir, address, job, 2, r)
              for r in range(world)),
          f"W={world}: it trains epoch 2 only, each rank its planned indices")


def last_commit_without_evaluation(bin_dir, address, work, runs=5):
    """Without evaluation nothing follows the last epoch's commit (rank 0's)
    but leaving: a rank that left first ended the generation under that
    commit (ABORTED; rank 0 then waited for a world that never formed).
    Every run must exit 0 with the last epoch committed."""
    os.makedirs(work, exist_ok=True)
    for run in range(runs):
        job = f"no-eval-{run}"
        cmds = [trainer_cmd(bin_dir, address, job, f"{job}-m{i}", 2, 400,
                            work, ["--epochs", "2", "--batch-size", "50",
                                   "--join-wait", "20s"], eval_size=0)
                for i in range(2)]
        outputs = finish(start_trainers(cmds, work, job), timeout=120)
        described = subprocess.run(
            [f"{bin_dir}/shardctl", "--coordinator", address, "describe",
             "--job", job], capture_output=True, text=True).stdout
        committed = re.search(r"committed:\s+epoch (\d+) position (\d+)",
                              described)
        ok = (all(rc == 0 for rc, _ in outputs) and committed is not None and
              committed.groups() == ("2", "0"))
        check(ok, f"--eval-size 0, run {run}: both ranks exit 0 "
                  f"({[rc for rc, _ in outputs]}) and epoch 2 is committed "
                  f"({committed.groups() if committed else described!r})")
        if not ok:
            for _, text in outputs:
                print(text[-1500:])


def coordinator_crash_loop(bin_dir, work):
    world, size, epochs = 3, 24000, 2
    job = "restarts"
    os.makedirs(work, exist_ok=True)
    members = [f"{job}-m{i}" for i in range(world)]
    rng = random.Random(7)
    with ShardDaemon(bin_dir) as daemon:
        procs = start_trainers(
            [trainer_cmd(bin_dir, daemon.address, job, m, world, size, work,
                         ["--epochs", str(epochs), "--batch-size", "8",
                          "--checkpoint-dir", os.path.join(work, "ckpt"),
                          "--checkpoint-every", "40"]) for m in members],
            work, job)
        restarts = 0
        while any(p.poll() is None for p, _ in procs) or restarts < 5:
            time.sleep(rng.uniform(0.2, 0.8))
            daemon.kill()
            time.sleep(rng.uniform(0.05, 0.4))
            daemon.restart()
            restarts += 1
            if restarts >= 8:
                break
        outputs = finish(procs)
        check(restarts >= 5, f"crash loop: {restarts} coordinator restarts")
        verify_exact_training(bin_dir, daemon.address, job, members, epochs,
                              work, "crash loop", outputs)


def verify_exact_training(bin_dir, coordinator, job, members, epochs, work,
                          what, outputs):
    """Every trainer of `members` (rank = position) exited 0 with identical
    parameters, and each rank trained exactly its planned indices of each
    of `epochs` epochs, once (read from the members' logs in `work`)."""
    ok = all(rc == 0 for rc, _ in outputs)
    check(ok, f"{what}: every trainer exits 0")
    if not ok:
        for _, text in outputs:
            print(text[-3000:])
        return
    text = "\n".join(t for _, t in outputs)
    check(len(set(re.findall(r"param_checksum=(\w+)", text))) == 1,
          f"{what}: identical parameter checksums")
    logged = merge(*(read_log(os.path.join(work, f"{m}.log"))
                     for m in members))
    for epoch in range(epochs):
        ok = all(logged.get((epoch, r), []) ==
                 plan(bin_dir, coordinator, job, epoch, r)
                 for r in range(len(members)))
        check(ok, f"{what}: epoch {epoch}: each rank trained exactly its "
                  f"planned indices, once")


def committed_history(outputs, logs):
    """Counter of the committed indices per epoch, and the end position.

    Each trainer attempt prints `joined ... rank=R world_size=W
    generation=G ... log_lines=L` and `resuming ... epoch=E position=P`; the
    lines it then appended to its index log trained positions P + R + kW of
    epoch E (base 0 in later epochs). A line of generation G is committed
    if it lies before the start of the next generation that trained.
    """
    attempts = []  # (generation, rank, world, (epoch, position), lines)
    for text, log_path in zip(outputs, logs):
        lines = open(log_path).read().split("\n")[:-1] \
            if os.path.exists(log_path) else []
        joined = re.findall(r"joined .* rank=(\d+) world_size=(\d+) "
                            r"generation=(\d+) .* log_lines=(\d+)", text)
        resumed = re.findall(r"resuming rank=\d+ epoch=(\d+) "
                             r"position=(\d+)", text)
        for i, ((rank, world, gen, first), (epoch, pos)) in enumerate(
                zip(joined, resumed)):
            last = int(joined[i + 1][3]) if i + 1 < len(joined) else len(lines)
            attempts.append((int(gen), int(rank), int(world),
                             (int(epoch), int(pos)),
                             lines[int(first):last]))
    starts = {gen: start for gen, _, _, start, _ in attempts}
    history, last_layout = {}, None
    for gen, rank, world, (epoch0, pos0), lines in attempts:
        later = [starts[g] for g in starts if g > gen]
        end = min(later) if later else (10**9, 0)
        counters = {}
        for line in lines:
            epoch, _, index = map(int, line.split())
            k = counters.get(epoch, 0)
            counters[epoch] = k + 1
            position = (pos0 if epoch == epoch0 else 0) + rank + k * world
            if (epoch, position) < end:
                history.setdefault(epoch, Counter())[index] += 1
        if not later:
            last_layout = (world, pos0)
    return history, last_layout


def elastic_run(bin_dir, work, name, size, first, later, action):
    """Runs `first` trainers, then `action(procs, logs)`, then `later` more;
    returns (outputs, logs) once all exited."""
    os.makedirs(work, exist_ok=True)
    with ShardDaemon(bin_dir, "--lease", "2s") as daemon:
        def cmd(member, max_world):
            return trainer_cmd(
                bin_dir, daemon.address, name, member, first, size, work,
                ["--epochs", "1", "--batch-size", "8", "--checkpoint-dir",
                 os.path.join(work, "ckpt"), "--checkpoint-every", "20",
                 "--min-world-size", "2", "--max-world-size", str(max_world),
                 "--heartbeat-interval", "300ms", "--pg-timeout", "30s"])
        max_world = first + later
        members = [f"{name}-m{i}" for i in range(first + later)]
        logs = [os.path.join(work, f"{m}.log") for m in members]
        procs = start_trainers([cmd(m, max_world) for m in members[:first]],
                               work, name)
        action(procs, logs)
        if later:
            procs += start_trainers([cmd(m, max_world)
                                     for m in members[first:]], work,
                                    name + "-late")
        outputs = finish(procs, timeout=240)
    return outputs, logs


def wait_for_lines(path, count, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path) and sum(1 for _ in open(path)) >= count:
            return True
        time.sleep(0.05)
    return False


def check_elastic(name, size, outputs, logs, expect_rc):
    rcs = [rc for rc, _ in outputs]
    check(rcs == expect_rc, f"{name}: trainer exit codes {rcs}")
    for (rc, text), expected in zip(outputs, expect_rc):
        if rc != expected:
            print(f"--- output of a trainer that exited {rc}:\n{text[-3000:]}")
    history, layout = committed_history([t for _, t in outputs], logs)
    counts = history.get(0, Counter())
    world, base = layout
    remaining = size - base
    end = base + -(-remaining // world) * world  # pad
    check(set(counts) == set(range(size)),
          f"{name}: committed history misses no index "
          f"({len(set(counts))} of {size} distinct)")
    check(sum(counts.values()) == end,
          f"{name}: {sum(counts.values())} committed samples = the layout's "
          f"{end} positions (last generation W={world} from {base}); "
          f"repeats {sum(counts.values()) - len(counts)} = padding {end - size}")
    text = "\n".join(t for _, t in outputs)
    check("re-joining" in text, f"{name}: survivors re-joined")


def elastic_tests(bin_dir, work):
    size = 12000

    def kill_one(procs, logs):
        wait_for_lines(logs[1], 1500)
        procs[1][0].send_signal(signal.SIGKILL)

    outputs, logs = elastic_run(bin_dir, os.path.join(work, "shrink"),
                                "shrink", size, 3, 0, kill_one)
    check_elastic("elastic 3->2", size, outputs, logs, [0, -9, 0])

    # The newcomers start once the first two are training, and must join
    # before those finish the epoch (or there is nothing left to grow into):
    # a larger dataset leaves them seconds even on a loaded machine.
    def let_them_train(procs, logs):
        wait_for_lines(logs[0], 160)

    outputs, logs = elastic_run(bin_dir, os.path.join(work, "grow"), "grow",
                                2 * size, 2, 2, let_them_train)
    check_elastic("elastic 2->4", 2 * size, outputs, logs, [0, 0, 0, 0])
    joined = re.findall(r"world_size=(\d+)", "\n".join(t for _, t in outputs))
    check("4" in joined, "elastic 2->4: a generation of 4 formed")


def crash_and_resume(bin_dir, address, work, world=3, epochs=1):
    size = 30000
    job = "crash"
    members = [f"{job}-m{i}" for i in range(world)]
    ckpt = os.path.join(work, "ckpt")
    # Loader threads assemble batches ahead of the loop: the committed
    # position must still count only what the loop trained.
    common = ["--epochs", str(epochs), "--batch-size", "8",
              "--checkpoint-dir", ckpt,
              "--checkpoint-every", "25", "--loader-workers", "2"]
    run1_dir = os.path.join(work, "run1")
    run2_dir = os.path.join(work, "run2")
    os.makedirs(run1_dir)
    os.makedirs(run2_dir)
    procs = start_trainers(
        [trainer_cmd(bin_dir, address, job, m, world, size, run1_dir, common)
         for m in members], run1_dir, job)
    victim_log = os.path.join(run1_dir, f"{members[1]}.log")
    deadline = time.time() + 120
    while time.time() < deadline:
        if os.path.exists(victim_log) and \
                sum(1 for _ in open(victim_log)) >= 3000:
            break
        time.sleep(0.05)
    procs[1][0].send_signal(signal.SIGKILL)
    time.sleep(0.5)
    for proc, _ in procs:
        proc.send_signal(signal.SIGKILL)
    finish(procs)
    run1 = merge(*(read_log(os.path.join(run1_dir, f"{m}.log"))
                   for m in members))
    trained_before = sum(len(v) for v in run1.values())
    check(0 < trained_before < size, f"crash: killed mid-epoch after "
                                     f"{trained_before} of {size} samples")

    outputs = finish(start_trainers(
        [trainer_cmd(bin_dir, address, job, m, world, size, run2_dir, common)
         for m in members], run2_dir, job + "-restart"))
    check(all(rc == 0 for rc, _ in outputs), "crash: restarted trainers exit 0")
    text = "\n".join(t for _, t in outputs)
    resumed = re.findall(r"resuming rank=\d+ epoch=(\d+) position=(\d+)", text)
    check(len(resumed) == world and len(set(resumed)) == 1,
          f"crash: all ranks resume from one checkpoint {set(resumed)}")
    if len(resumed) != world:
        print(text[-3000:])
        return
    epoch, position = map(int, resumed[0])
    check(epoch == 0 and 0 < position < size,
          f"crash: resumed mid-epoch 0 at position {position}")
    run2 = merge(*(read_log(os.path.join(run2_dir, f"{m}.log"))
                   for m in members))
    committed = Counter()
    per_rank = position // world
    for rank in range(world):
        before = run1.get((0, rank), [])
        check(len(before) >= per_rank,
              f"crash: rank {rank} trained {len(before)} >= {per_rank} "
              f"before the committed position")
        committed.update(before[:per_rank])
        committed.update(run2.get((0, rank), []))
    check(set(committed) == set(range(size)) and
          all(c == 1 for c in committed.values()),
          f"crash: committed history of epoch 0 holds each of {size} indices "
          f"exactly once (distinct {len(committed)}, "
          f"max count {max(committed.values())})")
    for later in range(1, epochs):
        trained = Counter()
        for rank in range(world):
            trained.update(run2.get((later, rank), []))
        check(set(trained) == set(range(size)) and
              all(c == 1 for c in trained.values()),
              f"crash: epoch {later}, after the restart, holds each of {size} "
              f"indices exactly once (distinct {len(trained)})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--backend", default="gloo",
                        choices=["gloo", "nccl"])
    parser.add_argument("--world", type=int, default=3,
                        help="ranks of --only crash")
    parser.add_argument("--only", choices=["crash"])
    args = parser.parse_args()
    bin_dir = os.path.abspath(args.bin_dir)
    BACKEND["name"] = args.backend
    with tempfile.TemporaryDirectory() as work, ShardDaemon(bin_dir) as daemon:
        if args.only == "crash":
            crash_and_resume(bin_dir, daemon.address,
                             os.path.join(work, "crash"), args.world,
                             epochs=2)
        else:
            run_all(bin_dir, daemon.address, work)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 1 if RESULTS["failed"] else 0


def run_all(bin_dir, address, work):
    """Parts 1 to 4 (the default)."""
    for world, size in ((2, 2000), (3, 3001)):
        train_and_verify(bin_dir, address, world, size, 2,
                         os.path.join(work, f"w{world}"))
    next_run_resumes_without_checkpoints(bin_dir, address, 2, 2000,
                                         os.path.join(work, "w2"))
    last_commit_without_evaluation(bin_dir, address,
                                   os.path.join(work, "no-eval"))
    crash_and_resume(bin_dir, address, os.path.join(work, "crash"))
    coordinator_crash_loop(bin_dir, os.path.join(work, "restarts"))
    elastic_tests(bin_dir, os.path.join(work, "elastic"))


if __name__ == "__main__":
    sys.exit(main())
