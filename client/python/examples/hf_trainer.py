#!/usr/bin/python3
"""Hugging Face Trainer fine-tuning a small causal language model on
variable-length text, with the coordinator's balanced batches.

    torchrun --nnodes 1 --nproc-per-node 2 --rdzv-backend shard \\
        --rdzv-endpoint 127.0.0.1:7070 --rdzv-id lm --max-restarts 3 \\
        hf_trainer.py --coordinator 127.0.0.1:7070 --job lm \\
        --output-dir /tmp/lm

The model is GPT-2 shaped, built from a config (no download): 2 layers,
width 64, over bytes (token = byte + 1, 0 pads). The text is every
paragraph of the files under --text-dir (default /usr/share/common-licenses,
real English prose of very different lengths), cut at --max-length bytes.
Each sample's cost is its length in tokens; every micro-batch holds at most
--batch-tokens padded tokens (count x longest), and every rank's step costs
the same. With --packed the micro-batches are packed sequences without
padding (transformers' DataCollatorWithFlattening: one row per micro-batch,
position ids restarting at each sample, which the model's SDPA attention
reads as sequence boundaries): --batch-tokens then caps each micro-batch's
real tokens, and --attention-length D (optional) balances the steps by
L + L^2 / D instead of by tokens. Checkpoints every --save-steps steps are committed to the
coordinator; a restarted run (torchrun --max-restarts, or the same command
again) resumes from the committed checkpoint with the data right after it.
With --min-world-size / --max-world-size the job is elastic: the same
command with another --nproc-per-node within those bounds resumes there,
the rest of the epoch re-split over the new world.

The lines that make a Trainer script use the coordinator are marked
"shard:". --record FILE writes "epoch step index" per trained sample (tests;
"{rank}" and "{restart}" in FILE become the rank and torchrun's restart
count).
"""
import argparse
import os

import torch
import transformers

from shard.hf import ShardTrainer  # shard: the Trainer subclass


def paragraphs(text_dir, max_length):
    """Every non-empty paragraph of the files under text_dir, as bytes cut
    at max_length, in a fixed order."""
    found = []
    for folder, _, files in sorted(os.walk(text_dir)):
        for name in sorted(files):
            with open(os.path.join(folder, name), "rb") as text:
                for paragraph in text.read().split(b"\n\n"):
                    paragraph = b" ".join(paragraph.split())
                    if paragraph:
                        found.append(paragraph[:max_length])
    return found


class ByteText(torch.utils.data.Dataset):
    """Sample i: paragraph i as token ids (byte + 1)."""

    def __init__(self, texts):
        self.texts = texts

    def __len__(self):
        return len(self.texts)

    def __getitem__(self, index):
        return {"input_ids": torch.tensor(list(self.texts[index])) + 1,
                "sample_index": index}


def flatten(samples):
    """The micro-batch as one row without padding (DataCollatorWithFlattening:
    input_ids, labels with -100 at each sample's first token, position_ids
    from 0 in each sample)."""
    batch = transformers.DataCollatorWithFlattening()(samples)
    batch["sample_index"] = torch.tensor([s["sample_index"] for s in samples])
    return batch


def pad_to_longest(samples):
    """input_ids and attention_mask padded with 0 to the longest sample;
    labels are the inputs, -100 on padding."""
    longest = max(len(sample["input_ids"]) for sample in samples)
    ids = torch.zeros(len(samples), longest, dtype=torch.long)
    for row, sample in enumerate(samples):
        ids[row, :len(sample["input_ids"])] = sample["input_ids"]
    mask = (ids != 0).long()
    return {"input_ids": ids, "attention_mask": mask,
            "labels": ids.masked_fill(mask == 0, -100),
            "sample_index": torch.tensor([s["sample_index"] for s in samples])}


class RecordingTrainer(ShardTrainer):
    """Writes the indices of every micro-batch it trains (--record)."""

    def __init__(self, *args, record, **kwargs):
        super().__init__(*args, **kwargs)
        self.record = record

    def compute_loss(self, model, inputs, *args, **kwargs):
        indices = inputs.pop("sample_index")
        if self.record is not None:
            epoch, step = self.shard_sampler.epoch, self.state.global_step
            self.record.writelines(f"{epoch} {step} {int(i)}\n"
                                   for i in indices)
            self.record.flush()
        return super().compute_loss(model, inputs, *args, **kwargs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--coordinator", required=True)
    parser.add_argument("--job", required=True)
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--text-dir", default="/usr/share/common-licenses")
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--batch-tokens", type=int, default=2048)
    parser.add_argument("--max-steps", type=int, default=60)
    parser.add_argument("--save-steps", type=int, default=10)
    parser.add_argument("--loader-workers", type=int, default=0)
    parser.add_argument("--min-world-size", type=int, default=None)
    parser.add_argument("--max-world-size", type=int, default=None)
    parser.add_argument("--record", default=None)
    parser.add_argument("--packed", action="store_true",
                        help="packed sequences without padding")
    parser.add_argument("--attention-length", type=int, default=0,
                        help="with --packed: balance steps by L + L^2 / D")
    args = parser.parse_args()

    texts = paragraphs(args.text_dir, args.max_length)
    dataset = ByteText(texts)
    config = transformers.GPT2Config(vocab_size=257,
                                     n_positions=args.max_length, n_embd=64,
                                     n_layer=2, n_head=2,
                                     attn_implementation="sdpa")
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config)
    training_args = transformers.TrainingArguments(
        output_dir=args.output_dir, max_steps=args.max_steps,
        save_strategy="steps", save_steps=args.save_steps,
        logging_steps=args.save_steps, learning_rate=1e-3, use_cpu=True,
        ddp_backend="gloo",  # accelerate would pick MPI on Debian's torch
        report_to="none", dataloader_num_workers=args.loader_workers,
        remove_unused_columns=False)
    record = None
    if args.record:
        record = open(args.record.format(
            rank=os.environ.get("RANK", "0"),
            restart=os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")), "a")
    trainer = RecordingTrainer(
        model=model, args=training_args, train_dataset=dataset,
        data_collator=flatten if args.packed else pad_to_longest,
        record=record,
        coordinator=args.coordinator, job=args.job,  # shard: the job
        costs=[len(text) for text in texts],  # shard: tokens per sample
        batch_tokens=args.batch_tokens,  # shard: tokens per micro-batch
        # shard: packed: the sum of the lengths, else count x longest
        cost_model="sum" if args.packed else "padded",
        attention_length=args.attention_length,  # shard: time, if given
        min_replicas=args.min_world_size,  # shard: the sizes it may resume
        max_replicas=args.max_world_size)  # at (None: torchrun's only)
    # shard: resumes from the committed checkpoint (none at the start)
    trainer.train(resume_from_checkpoint=True)
    sampler = trainer.shard_sampler
    checksum = sum(float(p.detach().double().sum())
                   for p in model.parameters())
    print(f"rank {sampler.rank} of {sampler.num_replicas} (Trainer's world "
          f"{training_args.world_size}): trained to step "
          f"{trainer.state.global_step}, epoch {sampler.epoch}, params "
          f"{checksum:.10f}", flush=True)


if __name__ == "__main__":
    main()
