#!/usr/bin/python3
"""One rank of run_hf_trainer_bench.py: trains a small GPT-2 (from a
config) for one epoch of --lengths with Hugging Face Trainer and one
sampler, and writes what it trained.

--sampler shard          shard.hf.ShardTrainer, balanced batches of at most
                         --batch-tokens padded tokens (count x longest); with
                         --attention-d D the costs are L + L^2/D
                         (shard.costs) and the budget --batch-size x the
                         cost of the longest sample
--sampler group_by_length   Trainer(train_sampling_strategy=
                         "group_by_length"): transformers'
                         LengthGroupedSampler, batches sharded across ranks
                         by accelerate
--sampler distributed_length_grouped   transformers'
                         DistributedLengthGroupedSampler (each rank its own
                         share), in a DataLoader of --batch-size
--sampler random         Trainer's default (RandomSampler, sharded by
                         accelerate)
With --packed every sampler's micro-batches are packed sequences without
padding (transformers' DataCollatorWithFlattening: one row, position ids
from 0 in each sample, SDPA attention); shard then plans with
--cost-model sum and --batch-tokens as the cap on a row's tokens.
The samples are random byte tokens of the given lengths; without --packed
micro-batches are padded to their longest. Writes --out (a JSON line per
micro-batch: count, longest, real tokens, the sample indices, the tokens
the step computes: count x longest padded, the real tokens packed) and,
last, {"seconds": the epoch's training time} (from its first step, see
OneEpochTimer).
"""
import argparse
import json
import os
import time

import numpy as np
import torch
import transformers
from transformers.trainer_pt_utils import DistributedLengthGroupedSampler


class Tokens(torch.utils.data.Dataset):
    def __init__(self, lengths):
        self.lengths = lengths

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(int(index))
        ids = torch.randint(1, 257, (int(self.lengths[index]),),
                            generator=generator)
        return {"input_ids": ids, "index": int(index)}


class Recorder:
    """The collator: pads to the longest (or, packed, flattens into one
    row) and records the micro-batch."""

    def __init__(self, out, packed):
        self.out = out
        self.packed = packed

    def __call__(self, samples):
        lengths = [len(s["input_ids"]) for s in samples]
        real = sum(lengths)
        computed = real if self.packed else len(samples) * max(lengths)
        self.out.write(json.dumps([len(samples), max(lengths), real,
                                   [s["index"] for s in samples],
                                   computed]) + "\n")
        self.out.flush()
        if self.packed:
            return transformers.DataCollatorWithFlattening()(
                [{"input_ids": s["input_ids"]} for s in samples])
        ids = torch.zeros(len(samples), max(lengths), dtype=torch.long)
        for row, sample in enumerate(samples):
            ids[row, :len(sample["input_ids"])] = sample["input_ids"]
        mask = (ids != 0).long()
        return {"input_ids": ids, "attention_mask": mask,
                "labels": ids.masked_fill(mask == 0, -100)}


class OneEpochTimer(transformers.TrainerCallback):
    """Stops training after one epoch; `seconds` runs from the first
    step's beginning (its micro-batch fetched: a coordinator's join and a
    process group's forming are not counted, for any sampler) to the
    epoch's end."""

    def __init__(self):
        self.began = None
        self.seconds = None

    def on_step_begin(self, args, state, control, **kwargs):
        if self.began is None:
            self.began = time.perf_counter()

    def on_epoch_end(self, args, state, control, **kwargs):
        self.seconds = time.perf_counter() - self.began
        control.should_training_stop = True


class DistributedLengthGroupedTrainer(transformers.Trainer):
    """Trainer with transformers' DistributedLengthGroupedSampler in its own
    DataLoader (accelerate would shard its batches a second time)."""

    def __init__(self, *args, lengths, **kwargs):
        super().__init__(*args, **kwargs)
        self.lengths = lengths

    def get_train_dataloader(self):
        sampler = DistributedLengthGroupedSampler(
            self.args.per_device_train_batch_size, lengths=self.lengths,
            num_replicas=self.args.world_size, rank=self.args.process_index)
        return torch.utils.data.DataLoader(
            self.train_dataset,
            batch_size=self.args.per_device_train_batch_size,
            sampler=sampler, collate_fn=self.data_collator)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sampler", required=True,
                        choices=["shard", "group_by_length",
                                 "distributed_length_grouped", "random"])
    parser.add_argument("--lengths", required=True)
    parser.add_argument("--coordinator")
    parser.add_argument("--job", default="bench")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--batch-tokens", type=int, default=8192)
    parser.add_argument("--context", type=int, default=1024)
    parser.add_argument("--attention-d", type=float, default=None)
    parser.add_argument("--packed", action="store_true")
    parser.add_argument("--out", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    lengths = np.load(args.lengths).astype(np.int64)
    dataset = Tokens(lengths)
    config = transformers.GPT2Config(vocab_size=257, n_positions=args.context,
                                     n_embd=64, n_layer=2, n_head=2,
                                     attn_implementation="sdpa")
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config)
    out = open(args.out.format(rank=os.environ.get("RANK", "0")), "w")
    settings = dict(
        output_dir=os.path.join(args.work, "out"), use_cpu=True,
        report_to="none", save_strategy="no", logging_strategy="no",
        ddp_backend="gloo",
        per_device_train_batch_size=args.batch_size, learning_rate=1e-3,
        remove_unused_columns=False, disable_tqdm=True)
    if args.sampler == "shard":
        settings["max_steps"] = 1 << 20  # Stopped at the epoch's end.
    else:
        settings["num_train_epochs"] = 1
    if args.sampler == "group_by_length":
        settings["train_sampling_strategy"] = "group_by_length"
    training_args = transformers.TrainingArguments(**settings)
    timer = OneEpochTimer()
    common = dict(model=model, args=training_args, train_dataset=dataset,
                  data_collator=Recorder(out, args.packed),
                  callbacks=[timer])
    if args.sampler == "shard":
        from shard.costs import attention_costs
        from shard.hf import ShardTrainer
        costs, budget, policy = lengths, args.batch_tokens, {}
        if args.packed:
            # T caps a row's tokens; with --attention-d the steps are
            # balanced by L + L^2 / d.
            policy = dict(cost_model="sum",
                          attention_length=round(args.attention_d or 0))
        elif args.attention_d is not None:
            costs = attention_costs(lengths, args.attention_d)
            budget = int(costs.max()) * args.batch_size
        trainer = ShardTrainer(coordinator=args.coordinator, job=args.job,
                               costs=costs, batch_tokens=budget, **policy,
                               **common)
    elif args.sampler == "distributed_length_grouped":
        trainer = DistributedLengthGroupedTrainer(lengths=lengths.tolist(),
                                                  **common)
    else:
        trainer = transformers.Trainer(**common)
    trainer.train()
    out.write(json.dumps({"seconds": timer.seconds}) + "\n")
    out.close()


if __name__ == "__main__":
    main()
