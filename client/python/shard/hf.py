"""Hugging Face Trainer on the coordinator's shards or balanced batches.

    from shard.hf import ShardTrainer

    trainer = ShardTrainer(model=model, args=training_args,
                           train_dataset=dataset, data_collator=collator,
                           coordinator="shardd:7070", job="lm",
                           costs=lengths, batch_tokens=4096)
    trainer.train(resume_from_checkpoint=True)

Started by torchrun (`--rdzv-backend shard`, or any launcher that sets
RANK/WORLD_SIZE), each process joins the job `job` with torchrun's rank, and
the Trainer trains on what the coordinator serves that rank:
- with `costs` and `batch_tokens` (or `batch_size`): balanced micro-batches
  (shard.torch.DistributedBatchSampler): every rank's step costs the same;
  the steps of an epoch are known only once it was served, so
  TrainingArguments needs max_steps;
- without: DistributedSampler's indices (DistributedShardSampler) in
  batches of per_device_train_batch_size.

Progress: each checkpoint Trainer saves is committed to the coordinator
after it was written (rank 0; `shard_position.json` in the checkpoint
names the position), and train(resume_from_checkpoint=True) resumes from
the checkpoint whose position the coordinator holds (a process killed
between the save and the commit resumes from the one before), with the data
continuing right after the last committed step: no sample twice, none
skipped (checked with a killed worker, and with a resume at another world
size: give `min_replicas` / `max_replicas`, and the same script started
with another number of processes within them resumes there). Keep
save_total_limit at 2 or more (or None): 1 would delete the committed
checkpoint before the next commit. A job with committed progress refuses
train() without resume_from_checkpoint (the model would start over while
the data does not).

Trainer's own epoch counter follows the coordinator's: an epoch is one pass
of the job's epoch. The loader is shard.torch.DataLoader with
TrainingArguments' dataloader_num_workers (worker processes are counted
exactly). The dataset's items go to `data_collator` as they are (columns
are not removed: give the model's inputs). With gradient accumulation, a
pass's last micro-batches that do not fill an accumulation are added to the
next optimizer step (Trainer's behaviour for loaders of unknown length).

Packed sequences without padding (transformers.DataCollatorWithFlattening:
one row per micro-batch, position_ids restarting at each sample; give
costs=lengths, cost_model="sum" and batch_tokens, the cap on a
micro-batch's tokens): the model must not build a KV cache in training,
or transformers ignores the samples' boundaries (GPT-2 in transformers
5.12 then attends across them, and the loss is not the padded one's).
Trainer turns the cache off (TrainingArguments.use_cache, False by
default); ShardTrainer refuses such batches (ValueError) while
model.config.use_cache is true.
"""
import json
import os
import sys

import transformers
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

import shard.torch
from shard import _compat

POSITION_FILE = "shard_position.json"
# Where shared_attention_length keeps d, in the Trainer's output_dir.
ATTENTION_LENGTH_FILE = "shard_attention_length.json"


# Trainer resumes a multi-process CPU run's optimizer onto "cpu:0".
_compat.accept_indexed_cpu_locations()


class ShardTrainer(transformers.Trainer):
    """transformers.Trainer whose training data comes from the coordinator.
    Takes Trainer's arguments plus the coordinator's (keyword only):
    `coordinator` ("host:port" or a shard.Client), `job`, and optionally
    `costs` with `batch_tokens` or `batch_size` (balanced batches;
    `cost_model`, `batch_window`, `attention_length` as
    DistributedBatchSampler takes them),
    `member`, `seed`, `drop_last`, `min_replicas`, `max_replicas`.
    Errors: ValueError for settings that cannot be exact (see the module);
    shard.ShardError from the coordinator."""

    def __init__(self, *args, coordinator, job, costs=None, batch_tokens=0,
                 batch_size=0, cost_model="padded", batch_window=0,
                 attention_length=0, member=None, seed=0, drop_last=False, min_replicas=None,
                 max_replicas=None, **kwargs):
        super().__init__(*args, **kwargs)
        launcher_world = int(os.environ.get("WORLD_SIZE", "1"))
        if launcher_world > 1 and self.args.world_size != launcher_world:
            raise ValueError(
                f"Trainer's process group has {self.args.world_size} "
                f"rank(s) but the launcher started {launcher_world}: its "
                f"ranks would train apart. On CPU with a torch built with "
                f"MPI (Debian's), accelerate picks the MPI backend, which "
                f"needs mpirun: give TrainingArguments(ddp_backend='gloo')")
        if self.args.save_total_limit == 1:
            raise ValueError(
                "ShardTrainer needs save_total_limit >= 2 (or None): with 1, "
                "saving a checkpoint deletes the committed one before the "
                "new one is committed")
        balanced = costs is not None
        if balanced and self.args.max_steps <= 0:
            raise ValueError(
                "balanced batches (costs=...) need TrainingArguments("
                "max_steps=...): an epoch's steps are known only once it "
                "was served")
        self._sampler_settings = dict(
            coordinator=coordinator, job=job, member=member, seed=seed,
            drop_last=drop_last, min_replicas=min_replicas,
            max_replicas=max_replicas)
        if balanced:
            self._sampler_settings.update(
                costs=costs, batch_tokens=batch_tokens, batch_size=batch_size,
                cost_model=cost_model, batch_window=batch_window,
                attention_length=attention_length)
        self.shard_sampler = None
        self._packed_checked = False

    def train(self, resume_from_checkpoint=None, **kwargs):
        """Trainer.train, joining the job first; resume_from_checkpoint=True
        picks the checkpoint the coordinator's committed position names."""
        self._join()
        committed = (self.shard_sampler.membership.committed_epoch,
                     self.shard_sampler.membership.committed_position)
        checkpoint = self._checkpoint_for(committed, resume_from_checkpoint)
        if checkpoint is not None:
            print(f"job {self.shard_sampler.membership.job_id}: resuming from "
                  f"{checkpoint} (epoch {committed[0]} position "
                  f"{committed[1]})", file=sys.stderr, flush=True)
        return super().train(resume_from_checkpoint=checkpoint, **kwargs)

    def get_train_dataloader(self):
        """The coordinator's data for this rank (not re-sharded by
        accelerate: the coordinator already did)."""
        self._join()
        loader_settings = dict(
            collate_fn=self.data_collator,
            num_workers=self.args.dataloader_num_workers,
            pin_memory=self.args.dataloader_pin_memory)
        if self.args.dataloader_num_workers > 0:
            loader_settings.update(
                persistent_workers=self.args.dataloader_persistent_workers,
                prefetch_factor=self.args.dataloader_prefetch_factor)
        if isinstance(self.shard_sampler, shard.torch.DistributedBatchSampler):
            return shard.torch.DataLoader(self.train_dataset,
                                          batch_sampler=self.shard_sampler,
                                          **loader_settings)
        return shard.torch.DataLoader(
            self.train_dataset, sampler=self.shard_sampler,
            batch_size=self._train_batch_size,
            drop_last=self.args.dataloader_drop_last, **loader_settings)

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        """Trainer's, ending the epoch once the pass is over (for a loader
        of unknown length Trainer would otherwise ask the spent iterator
        for the rest of max_steps' steps)."""
        batches, items = super().get_batch_samples(epoch_iterator,
                                                   num_batches, device)
        if not batches:
            self.control.should_epoch_stop = True
        elif not self._packed_checked:
            self._check_packed(batches[0])
        return batches, items

    def _check_packed(self, batch):
        """ValueError for packed sequences (position_ids, no attention_mask)
        on a model that builds a KV cache: transformers then does not
        separate the samples of the row."""
        self._packed_checked = True
        packed = "position_ids" in batch and "attention_mask" not in batch
        if packed and getattr(self.model.config, "use_cache", False):
            raise ValueError(
                "packed sequences (position_ids without attention_mask, as "
                "DataCollatorWithFlattening makes them) need the model's KV "
                "cache off in training (model.config.use_cache = False; "
                "TrainingArguments(use_cache=False), the default): with a "
                "cache transformers ignores where each sample starts, and "
                "attention crosses the samples of a row")

    def _init_training_state(self, *args, **kwargs):
        """Trainer's state from the checkpoint, its epoch the coordinator's,
        and no batches skipped: the sampler resumes after the commit."""
        super()._init_training_state(*args, **kwargs)
        return self.shard_sampler.epoch, 0

    def _save_checkpoint(self, model, trial):
        """Trainer's checkpoint, then (rank 0) its position committed."""
        super()._save_checkpoint(model, trial)
        if self.args.process_index == 0:
            state = self.shard_sampler.state_dict()
            epoch, position = self.shard_sampler.commit(state["epoch"],
                                                        state["position"])
            folder = os.path.join(
                self._get_output_dir(trial),
                f"{PREFIX_CHECKPOINT_DIR}-{self.state.global_step}")
            _write_position(folder, self.shard_sampler.membership.job_id,
                            epoch, position)
        self.accelerator.wait_for_everyone()

    def _join(self):
        if self.shard_sampler is not None:
            return
        sampler_class = (shard.torch.DistributedBatchSampler
                         if "costs" in self._sampler_settings else
                         shard.torch.DistributedShardSampler)
        self.shard_sampler = sampler_class(self.train_dataset,
                                           **self._sampler_settings)

    def _checkpoint_for(self, committed, resume):
        """The checkpoint to resume from for the committed (epoch,
        position); ValueError where none matches."""
        job = self.shard_sampler.membership.job_id
        if resume is None or resume is False:
            if committed != (0, 0):
                raise ValueError(
                    f"job {job} continues at epoch {committed[0]} position "
                    f"{committed[1]}: train(resume_from_checkpoint=True) "
                    f"resumes the model from the matching checkpoint")
            return None
        if resume is True:
            return _matching_checkpoint(self.args.output_dir, job, committed)
        if _read_position(resume, job) != committed:
            raise ValueError(
                f"checkpoint {resume} is not at job {job}'s committed epoch "
                f"{committed[0]} position {committed[1]}")
        return resume


def _write_position(folder, job, epoch, position):
    path = os.path.join(folder, POSITION_FILE)
    with open(path + ".tmp", "w") as out:
        json.dump({"job": job, "epoch": epoch, "position": position}, out)
    os.replace(path + ".tmp", path)


def _read_position(folder, job):
    """(epoch, position) a checkpoint of `job` was committed at, or None."""
    try:
        with open(os.path.join(folder, POSITION_FILE)) as stored:
            state = json.load(stored)
    except FileNotFoundError:
        return None
    if state.get("job") != job:
        return None
    return state["epoch"], state["position"]


def _matching_checkpoint(output_dir, job, committed):
    """The newest checkpoint-N of output_dir committed at `committed`; None
    for a job at its start with no such checkpoint."""
    names = []
    if os.path.isdir(output_dir):
        names = [name for name in os.listdir(output_dir)
                 if name.startswith(f"{PREFIX_CHECKPOINT_DIR}-") and
                 name.split("-")[-1].isdigit()]
    names.sort(key=lambda name: int(name.split("-")[-1]), reverse=True)
    for name in names:
        folder = os.path.join(output_dir, name)
        if _read_position(folder, job) == committed:
            return folder
    if committed == (0, 0):
        return None
    raise ValueError(
        f"no checkpoint in {output_dir} was committed at job {job}'s "
        f"epoch {committed[0]} position {committed[1]}")


def lm_step_seconds(model, vocab_size=None):
    """A step_seconds(count, length) for shard.costs.fit_attention_length:
    one forward and backward pass of `model` (a Hugging Face causal LM, on
    its device) on `count` random sequences of `length` tokens, labels the
    inputs; the gradients are dropped. Seconds of wall time (CUDA
    synchronized). A length past the model's positions
    (config.max_position_embeddings or n_positions) is a ValueError that
    names the lengths to measure instead."""
    import time

    import torch

    from shard.costs import DEFAULT_LENGTHS
    vocab = vocab_size or model.config.vocab_size
    device = next(model.parameters()).device
    positions = _model_positions(model.config)

    def step_seconds(count, length):
        if positions is not None and length > positions:
            fitting = tuple(n for n in DEFAULT_LENGTHS if n <= positions)
            raise ValueError(
                f"the model takes sequences of at most {positions} tokens, "
                f"not {length}: measure shorter lengths, e.g. "
                f"fit_attention_length(step_seconds, lengths={fitting})")
        ids = torch.randint(0, vocab, (count, length), device=device)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        began = time.perf_counter()
        model(input_ids=ids, labels=ids).loss.backward()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds = time.perf_counter() - began
        model.zero_grad(set_to_none=True)
        return seconds

    return step_seconds


def shared_attention_length(model, output_dir, step_seconds=None,
                            **fit_settings):
    """d for shard.costs.attention_costs, the same on every rank and every
    launch of a job: costs measured in each process differ (timings do),
    and a join with costs other than the job's is refused. Rank 0 reads d
    from OUTPUT_DIR/ATTENTION_LENGTH_FILE (written by an earlier launch),
    or measures it (fit_attention_length(step_seconds or
    lm_step_seconds(model), **fit_settings)) and writes it there; with a
    formed torch.distributed process group (TrainingArguments forms it
    under torchrun) every other rank gets rank 0's d. Give the Trainer's
    output_dir: the file stays with the job's checkpoints."""
    import torch.distributed as dist

    from shard.costs import fit_attention_length
    grouped = dist.is_available() and dist.is_initialized()
    found = [None]
    if not grouped or dist.get_rank() == 0:
        path = os.path.join(output_dir, ATTENTION_LENGTH_FILE)
        if os.path.exists(path):
            with open(path) as stored:
                found[0] = float(json.load(stored)["attention_length"])
        else:
            found[0] = fit_attention_length(
                step_seconds or lm_step_seconds(model), **fit_settings)
            os.makedirs(output_dir, exist_ok=True)
            with open(path + ".tmp", "w") as written:
                json.dump({"attention_length": found[0]}, written)
            os.replace(path + ".tmp", path)
    if grouped:
        dist.broadcast_object_list(found, src=0)
    return found[0]


def _model_positions(config):
    """The longest sequence a Hugging Face config's model takes (None when
    it does not say)."""
    for name in ("max_position_embeddings", "n_positions"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


__all__ = ["ATTENTION_LENGTH_FILE", "POSITION_FILE", "ShardTrainer",
           "lm_step_seconds", "shared_attention_length"]
