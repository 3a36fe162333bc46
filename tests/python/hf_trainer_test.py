#!/usr/bin/python3
"""client/python/examples/hf_trainer.py (Hugging Face Trainer, shard.hf)
under torchrun --rdzv-backend shard, over a real shardd, with a worker
killed:

Two workers train a small causal LM on balanced batches (token budget per
micro-batch) for --steps optimizer steps, checkpointing every 10; after the
first checkpoint was committed, one worker is SIGKILLed mid-step.
torchrun (--max-restarts 1) restarts both; they resume from the committed
checkpoint. Checked: torchrun exits 0; both restarted workers name the same
checkpoint, at the coordinator's committed position; both ranks are one
process group of 2 and end with identical parameters; the trained history
(the first attempt's steps before that checkpoint, then the restarted
attempt) holds every sample of each whole epoch exactly once and no sample
twice in the last, partial one; the run trained to the last step.
Before that, settings that cannot be exact are refused (ValueError) before
any join: save_total_limit=1, and balanced batches without max_steps.
Exits 77 (skipped) where transformers is not installed (Debian bookworm:
tests/current-torch/run.sh runs it on forky).
"""
import collections
import glob
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from harness import (ShardDaemon, check, communicate_or_report,  # noqa: E402
                     exit_code, expect_error, parse_args, torchrun_command,
                     torchrun_env)

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "client", "python", "examples",
                       "hf_trainer.py")
WORLD = 2
SAVE_STEPS = 10


def start(python_dir, address, work, steps):
    env = torchrun_env(python_dir)
    return subprocess.Popen(
        [*torchrun_command(), "--nnodes=1", f"--nproc_per_node={WORLD}",
         f"--rdzv_endpoint={address}", "--rdzv_id=lm", "--max_restarts=1",
         EXAMPLE, "--coordinator", address, "--job", "lm", "--output-dir",
         os.path.join(work, "out"), "--max-length", "128",
         "--batch-tokens", "4096", "--max-steps", str(steps),
         "--save-steps", str(SAVE_STEPS),
         "--record", os.path.join(work, "record-{restart}-{rank}.txt")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True, cwd=work)


def read(pattern):
    """[(epoch, step, index)] of every file matching pattern."""
    rows = []
    for path in glob.glob(pattern):
        with open(path) as lines:
            rows += [tuple(map(int, line.split())) for line in lines]
    return rows


def samples_in_epoch():
    sys.path.insert(0, os.path.dirname(EXAMPLE))
    from hf_trainer import paragraphs
    return len(paragraphs("/usr/share/common-licenses", 128))


def kill_a_worker_after_the_first_commit(proc, work):
    first = os.path.join(work, "out", f"checkpoint-{SAVE_STEPS}",
                         "shard_position.json")
    give_up = time.monotonic() + 300
    while (not os.path.exists(first) and proc.poll() is None and
           time.monotonic() < give_up):
        time.sleep(0.05)
    time.sleep(1.0)  # Train past the commit: that work must be redone.
    workers = subprocess.run(["pgrep", "-P", str(proc.pid)],
                             capture_output=True, text=True).stdout.split()
    check(len(workers) == WORLD, f"torchrun runs {WORLD} workers {workers}")
    if workers:
        os.kill(int(workers[-1]), signal.SIGKILL)


def check_history(work, out, size):
    resumed = re.findall(r"resuming from \S*checkpoint-(\d+) \(epoch (\d+) "
                         r"position (\d+)\)", out)
    check(len(resumed) == WORLD and len(set(resumed)) == 1,
          f"both restarted workers resume from one checkpoint {resumed}")
    if not resumed:
        return
    step = int(resumed[0][0])
    check(step >= SAVE_STEPS, f"resumed at a committed step ({step})")
    history = [row for row in read(os.path.join(work, "record-0-*.txt"))
               if row[1] < step]
    history += read(os.path.join(work, "record-1-*.txt"))
    by_epoch = collections.defaultdict(list)
    for epoch, _, index in history:
        by_epoch[epoch].append(index)
    last = max(by_epoch)
    check(last >= 1,
          f"the run went past one epoch (epochs {sorted(by_epoch)})")
    for epoch, indices in sorted(by_epoch.items()):
        if epoch < last:
            check(sorted(indices) == list(range(size)),
                  f"epoch {epoch}: every one of {size} samples trained "
                  f"exactly once ({len(indices)} trained, "
                  f"{len(set(indices))} distinct)")
        else:
            check(len(indices) == len(set(indices)),
                  f"epoch {epoch} (partial): no sample twice "
                  f"({len(indices)} trained)")


def refusals(work):
    import transformers
    from shard.hf import ShardTrainer
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=257, n_positions=64, n_embd=16, n_layer=1, n_head=1))

    def trainer(**settings):
        arguments = transformers.TrainingArguments(
            output_dir=os.path.join(work, "refused"), use_cpu=True,
            report_to="none", **settings)
        return ShardTrainer(model=model, args=arguments, train_dataset=[],
                            coordinator="127.0.0.1:1", job="never",
                            costs=[1], batch_tokens=8)
    expect_error("save_total_limit=1", ValueError,
                 lambda: trainer(max_steps=5, save_total_limit=1))
    expect_error("balanced batches without max_steps", ValueError,
                 lambda: trainer(num_train_epochs=1))


def main():
    args = parse_args(__doc__.splitlines()[0])
    try:
        import transformers  # noqa: F401
    except ImportError:
        print("transformers is not installed: skipped")
        return 77
    size = samples_in_epoch()
    steps = 60
    work = tempfile.mkdtemp(prefix="shard-hf-trainer-")
    refusals(work)
    with ShardDaemon(args.bin_dir) as daemon:
        proc = start(args.python_dir, daemon.address, work, steps)
        kill_a_worker_after_the_first_commit(proc, work)
        out, _ = communicate_or_report(proc, 600)
        check(proc.returncode == 0,
              f"torchrun restarts the workers and exits 0 "
              f"(exit {proc.returncode}) {out[-1500:]}")
        finished = re.findall(r"rank (\d) of 2 \(Trainer's world 2\): "
                              r"trained to step (\d+)", out)
        check(sorted(finished) == [("0", str(steps)), ("1", str(steps))],
              f"both ranks of one process group of 2 trained to step "
              f"{steps}: {finished}")
        params = set(re.findall(r"params (-?\d+\.\d{10})", out))
        check(len(params) == 1,
              f"DDP kept the ranks' parameters identical {sorted(params)}")
        check_history(work, out, size)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
