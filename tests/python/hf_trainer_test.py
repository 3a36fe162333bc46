#!/usr/bin/python3
"""client/python/examples/hf_trainer.py (Hugging Face Trainer, shard.hf)
under torchrun --rdzv-backend shard, over a real shardd, with a worker
killed and then a resume at another world size:

1. Two workers train a small causal LM on balanced batches (token budget
   per micro-batch) of an elastic job (1..3 ranks) to step 30, each with
   a DataLoader worker process (dataloader_num_workers=1), checkpointing
   every 10; after the first checkpoint was committed, one worker is
   SIGKILLed mid-step. torchrun (--max-restarts 1) restarts both; they
   resume from the committed checkpoint.
2. The same command with three workers resumes from the checkpoint of
   step 30 and trains to step 60: the world forms at 3 (the launch's
   size), and the rest of the epoch is re-split over 3.
3. Packed sequences without padding (--packed: DataCollatorWithFlattening,
   SDPA attention, the sum cost model, steps balanced by time with
   --attention-length) on another job: two workers, one SIGKILLed after
   the first commit, resumed, to step 30. Before any run, the loss of a
   micro-batch flattened into one row equals its loss padded to its
   longest sample (the same model and samples; relative difference below
   1e-5), and the flattened row holds no padding.
Checked for each run: torchrun exits 0; every worker names the same
checkpoint, at the coordinator's committed position; all ranks are one
process group of the launch's size and end with identical parameters.
Then the trained history (each attempt's steps before the checkpoint the
next one resumed from, then the last attempt) holds every sample of each
whole epoch exactly once, and no sample twice in the last, partial one,
but for the pad tail's repeats (at most W - 1 per world of an epoch).
Before that, settings that cannot be exact are refused (ValueError) before
any join: save_total_limit=1, balanced batches without max_steps, and a
packed row (position_ids without attention_mask) with
TrainingArguments(use_cache=True) (attention would cross its samples); and
lm_step_seconds refuses lengths past the model's positions (ValueError
naming them, not an IndexError inside the embedding).
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
                     exit_code, expect_error, installed, parse_args,
                     torchrun_command, torchrun_env)

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(HERE, "..", "..", "client", "python", "examples",
                       "hf_trainer.py")
SAVE_STEPS = 10
# (workers, the step the run trains to, DataLoader worker processes per
# worker) of each torchrun run.
RUNS = ((2, 30, 1), (3, 60, 0))


def start(python_dir, address, work, run, world, steps, loader_workers,
          job="lm", out="out", extra=()):
    env = torchrun_env(python_dir)
    return subprocess.Popen(
        [*torchrun_command(), "--nnodes=1", f"--nproc_per_node={world}",
         f"--rdzv_endpoint={address}", f"--rdzv_id=lm-{run}",
         "--max_restarts=1", EXAMPLE, "--coordinator", address, "--job",
         job, "--output-dir", os.path.join(work, out), *extra,
         "--max-length", "128", "--batch-tokens", "4096",
         "--max-steps", str(steps), "--save-steps", str(SAVE_STEPS),
         "--min-world-size", "1", "--max-world-size", "3",
         "--loader-workers", str(loader_workers),
         "--record",
         os.path.join(work, f"record-{run}-{{restart}}-{{rank}}.txt")],
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


def kill_a_worker_after_the_first_commit(proc, work, out="out"):
    first = os.path.join(work, out, f"checkpoint-{SAVE_STEPS}",
                         "shard_position.json")
    give_up = time.monotonic() + 300
    while (not os.path.exists(first) and proc.poll() is None and
           time.monotonic() < give_up):
        time.sleep(0.05)
    time.sleep(1.0)  # Train past the commit: that work must be redone.
    workers = subprocess.run(["pgrep", "-P", str(proc.pid)],
                             capture_output=True, text=True).stdout.split()
    check(len(workers) == RUNS[0][0],
          f"torchrun runs {RUNS[0][0]} workers {workers}")
    if workers:
        os.kill(int(workers[-1]), signal.SIGKILL)


def resumed_step(out, world):
    """The step all `world` workers of a run resumed from (None where they
    did not agree), checked."""
    resumed = re.findall(r"resuming from \S*checkpoint-(\d+) \(epoch (\d+) "
                         r"position (\d+)\)", out)
    check(len(resumed) == world and len(set(resumed)) == 1,
          f"all {world} workers resume from one checkpoint {resumed}")
    if len(resumed) != world or len(set(resumed)) != 1:
        return None
    step = int(resumed[0][0])
    check(step >= SAVE_STEPS, f"resumed at a committed step ({step})")
    return step


def check_history(attempts, size):
    """attempts: (record pattern, step the next attempt resumed from, or
    None for the last) in order."""
    history = []
    for pattern, next_step in attempts:
        history += [row for row in read(pattern)
                    if next_step is None or row[1] < next_step]
    by_epoch = collections.defaultdict(list)
    for epoch, _, index in history:
        by_epoch[epoch].append(index)
    last = max(by_epoch)
    check(last >= 1,
          f"the runs went past one epoch (epochs {sorted(by_epoch)})")
    # The pad tail repeats at most W - 1 samples per world of an epoch (a
    # world of 2, then one of 3): 3 at most.
    most_repeated = 3
    for epoch, indices in sorted(by_epoch.items()):
        repeated = len(indices) - len(set(indices))
        if epoch < last:
            check(sorted(set(indices)) == list(range(size)) and
                  repeated <= most_repeated,
                  f"epoch {epoch}: every one of {size} samples trained, "
                  f"none twice but the pad tail's repeats ({len(indices)} "
                  f"trained, {len(set(indices))} distinct)")
        else:
            check(repeated <= most_repeated,
                  f"epoch {epoch} (partial): no sample twice but the pad "
                  f"tail's repeats ({len(indices)} trained, "
                  f"{len(set(indices))} distinct)")


def run_to_the_end(proc, world, steps):
    """torchrun's output once it exited, after the checks of its end."""
    out, _ = communicate_or_report(proc, 600)
    check(proc.returncode == 0,
          f"torchrun ({world} workers) exits 0 (exit {proc.returncode}) "
          f"{out[-1500:]}")
    finished = re.findall(rf"rank (\d) of {world} \(Trainer's world "
                          rf"{world}\): trained to step (\d+)", out)
    check(sorted(finished) == [(str(r), str(steps)) for r in range(world)],
          f"all ranks of one process group of {world} trained to step "
          f"{steps}: {finished}")
    params = set(re.findall(r"params (-?\d+\.\d{10})", out))
    check(len(params) == 1,
          f"DDP kept the ranks' parameters identical {sorted(params)}")
    return out


def check_packed_loss():
    """A micro-batch's loss flattened into one row (position ids restarting
    at each sample) equals its loss padded to its longest sample."""
    import torch
    import transformers
    sys.path.insert(0, os.path.dirname(EXAMPLE))
    from hf_trainer import ByteText, flatten, pad_to_longest, paragraphs
    dataset = ByteText(paragraphs("/usr/share/common-licenses", 128))
    samples = [dataset[i] for i in (0, 3, 7, 12, 20, 41)]
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=257, n_positions=128, n_embd=64, n_layer=2, n_head=2,
        attn_implementation="sdpa", use_cache=False)).eval()
    losses = []
    for collate in (pad_to_longest, flatten):
        batch = collate(samples)
        batch.pop("sample_index")
        with torch.no_grad():
            losses.append(float(model(**batch).loss))
    flat = flatten(samples)["input_ids"]
    lengths = [len(s["input_ids"]) for s in samples]
    check(tuple(flat.shape) == (1, sum(lengths)),
          f"the flattened micro-batch is one row of the {sum(lengths)} real "
          f"tokens, no padding (shape {tuple(flat.shape)}; padded to the "
          f"longest it is {len(samples)} x {max(lengths)})")
    padded, packed = losses
    check(abs(packed - padded) <= 1e-5 * abs(padded),
          f"the loss of the flattened micro-batch equals the padded one's "
          f"({packed:.8f} vs {padded:.8f})")


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
    # A packed row (position_ids, no attention_mask) on a model with a KV
    # cache (TrainingArguments(use_cache=True)): transformers would let
    # attention cross the row's samples.
    import torch
    packed = {"input_ids": torch.ones(1, 6, dtype=torch.long),
              "labels": torch.ones(1, 6, dtype=torch.long),
              "position_ids": torch.tensor([[0, 1, 2, 0, 1, 2]])}
    expect_error("packed sequences with TrainingArguments(use_cache=True)",
                 ValueError,
                 lambda: trainer(max_steps=5, use_cache=True).get_batch_samples(
                     iter([packed]), 1, "cpu"), "use_cache = False")
    # Trainer's default turns the cache off: the same row goes through.
    batches, _ = trainer(max_steps=5).get_batch_samples(iter([packed]), 1,
                                                        "cpu")
    check(len(batches) == 1, "a packed row with the cache off is trained")
    # The calibration's default lengths run to 1,024; this model takes 64.
    from shard.costs import fit_attention_length
    from shard.hf import lm_step_seconds
    expect_error("lengths past the model's 64 positions", ValueError,
                 lambda: fit_attention_length(lm_step_seconds(model)),
                 "at most 64 tokens")
    # d measured once and kept with the job's checkpoints: a later launch
    # reads it instead of measuring again (which would give other costs).
    from shard.hf import ATTENTION_LENGTH_FILE, shared_attention_length
    steps = []

    def step_seconds(count, length):
        steps.append(length)
        return 1e-6 * count * length * (1 + length / 500)
    folder = os.path.join(work, "calibrated")
    first = shared_attention_length(model, folder, step_seconds)
    measured = len(steps)
    again = shared_attention_length(model, folder, step_seconds)
    check(abs(first - 500) < 1 and again == first and measured > 0 and
          len(steps) == measured and
          os.path.exists(os.path.join(folder, ATTENTION_LENGTH_FILE)),
          f"shared_attention_length measures once (d {first}, then "
          f"{again}; {measured} steps, then {len(steps) - measured})")


def check_packed_run(args, address, work, size):
    """Run 3: packed sequences, a worker killed after the first commit."""
    world, steps, loaders = RUNS[0]
    proc = start(args.python_dir, address, work, 3, world, steps, loaders,
                 job="lm-packed", out="out-packed",
                 extra=["--packed", "--attention-length", "256"])
    kill_a_worker_after_the_first_commit(proc, work, "out-packed")
    out = run_to_the_end(proc, world, steps)
    restarted_at = resumed_step(out, world)
    if restarted_at is not None:
        check_history(
            [(os.path.join(work, "record-3-0-*.txt"), restarted_at),
             (os.path.join(work, "record-3-1-*.txt"), None)], size)


def main():
    args = parse_args(__doc__.splitlines()[0])
    if not installed("transformers"):
        return 77
    size = samples_in_epoch()
    work = tempfile.mkdtemp(prefix="shard-hf-trainer-")
    refusals(work)
    check_packed_loss()
    with ShardDaemon(args.bin_dir) as daemon:
        (first_world, first_steps, first_loaders), \
            (second_world, second_steps, second_loaders) = RUNS
        proc = start(args.python_dir, daemon.address, work, 1, first_world,
                     first_steps, first_loaders)
        kill_a_worker_after_the_first_commit(proc, work)
        first_out = run_to_the_end(proc, first_world, first_steps)
        restarted_at = resumed_step(first_out, first_world)
        proc = start(args.python_dir, daemon.address, work, 2, second_world,
                     second_steps, second_loaders)
        second_out = run_to_the_end(proc, second_world, second_steps)
        resized_at = resumed_step(second_out, second_world)
        check(resized_at == first_steps,
              f"{second_world} workers resume at the first run's last "
              f"checkpoint (step {resized_at}; the first run ended at "
              f"{first_steps})")
        if restarted_at is not None and resized_at is not None:
            check_history(
                [(os.path.join(work, "record-1-0-*.txt"), restarted_at),
                 (os.path.join(work, "record-1-1-*.txt"), resized_at),
                 (os.path.join(work, "record-2-0-*.txt"), None)], size)
        check_packed_run(args, daemon.address, work, size)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
