"""DistributedSampler drop-ins fed by the coordinator."""
import hashlib
import math
import os
import sys
import warnings

from shard.client import (Client, costs_bytes, costs_total, default_member_id,
                          job_spec)
from shard.errors import HEARTBEAT_ENDS, FailedPreconditionError


class _Pass:
    """One iteration over a sampler: its epoch, the position it started
    from, the indices handed out, and (with shard.torch.DataLoader) the
    samples the training loop received."""

    def __init__(self, epoch, start, tracked):
        self.epoch = epoch
        self.start = start
        self.yielded = 0
        self.consumed = 0
        self.tracked = tracked  # Consumption reported by a shard DataLoader.
        self.ended = False
        # The epoch's length in positions, once the stream was exhausted.
        self.end_position = None
        # Balanced batches: the position at the end of each step yielded.
        self.step_ends = []


def _iterated_by_worker_loader():
    """Whether a torch DataLoader with worker processes is pulling indices
    from the sampler (it prefetches batches ahead of the training loop)."""
    from torch.utils.data import dataloader
    frame = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return False
        owner = frame.f_locals.get("self")
        if isinstance(owner, dataloader._MultiProcessingDataLoaderIter):
            return True
        frame = frame.f_back
    return False


class DistributedShardSampler:
    """DistributedSampler's arguments and indices, from the coordinator.

    Joins job `job` on `coordinator` (an address or a shard.Client) as
    `member` (default: host name and local rank), creating the job from
    len(dataset), num_replicas, shuffle, seed and drop_last if it does not
    exist (with num_replicas=None the job must exist or WORLD_SIZE gives the
    world size). `num_replicas` comes from the coordinator, and so does
    `rank`: the one asked for (`rank`; default torchrun's RANK when set and
    WORLD_SIZE is the job's size) when the coordinator can grant it, so
    that under torchrun the sampler's rank is dist.get_rank(); a warning
    says so when it could not (another member of the world asked for it
    first, or the world is smaller). `min_replicas` / `max_replicas` make
    the job it creates elastic (docs/user-guide.md, "Elastic jobs"): after
    a lost rank the world re-forms with as few as min_replicas members,
    and grows to max_replicas (0 or None: num_replicas); like the rest of
    the spec they must be an existing job's.

    Epochs follow DistributedSampler: iter() yields this rank's indices of
    the current epoch as Python ints, exactly DistributedSampler's after
    set_epoch(epoch). The first epoch is the job's committed one (a
    restarted job resumes where it committed). Every iterator started in an
    epoch yields that epoch from its last committed (or loaded) position:
    a peek such as next(iter(loader)) does not move to another epoch, and
    what an abandoned iterator consumed is forgotten. The epoch advances
    when a pass was consumed to its end (the next iter() starts the next
    epoch; `epoch` names the last pass's until then, as DistributedSampler
    does), or by set_epoch()/load_state_dict(); set_epoch is never
    required.

    `position`, state_dict() and commit() count the samples the training
    loop received: with shard.torch.DataLoader exactly (its workers may
    prefetch batches ahead of the loop); with a plain DataLoader, the
    indices handed to it, which is exact only with num_workers=0 (a
    warning says so otherwise). A heartbeat thread keeps the membership
    alive.
    """

    _tail_for_drop_last = {False: "pad", True: "drop"}
    # Whether the sampler reads jobs with balanced batches (its subclass).
    _batched = False
    # A mixture's _Sources (its subclasses), None for one dataset.
    _mixture = None

    def __init__(self, dataset, *, coordinator, job, member=None,
                 num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False, min_replicas=None, max_replicas=None,
                 wait=600.0, heartbeat_interval=2.0, prefetch_bytes=8 << 20,
                 _tail=None):
        self.dataset_size = len(dataset)
        self.shuffle = shuffle
        self.seed = seed
        self.drop_last = drop_last
        self._tail = _tail or self._tail_for_drop_last[bool(drop_last)]
        self._prefetch_bytes = prefetch_bytes
        self.client = (coordinator if isinstance(coordinator, Client)
                       else Client(coordinator))
        launcher_world = os.environ.get("WORLD_SIZE")
        # RANK numbers the launcher's world: it is this job's rank only when
        # that world is the job's (not a node-local torchrun's of a larger
        # job).
        if rank is None and "RANK" in os.environ and (
                num_replicas is None or str(num_replicas) == launcher_world):
            rank = int(os.environ["RANK"])
        if num_replicas is None and launcher_world is not None:
            num_replicas = int(launcher_world)
        self._spec = None
        if num_replicas is not None:
            if not ((min_replicas or num_replicas) <= num_replicas <=
                    (max_replicas or num_replicas)):
                raise ValueError(
                    f"need min_replicas <= num_replicas <= max_replicas, "
                    f"got {min_replicas} <= {num_replicas} <= "
                    f"{max_replicas}")
            self._spec = self._job_spec(num_replicas)
            # Elastic: later worlds may form with min..max members.
            self._spec.min_world_size = min_replicas or 0
            self._spec.max_world_size = max_replicas or 0
        self._job = job
        self._member = member or default_member_id()
        self._requested_rank = rank
        self._wait = wait
        self._heartbeat_interval = heartbeat_interval
        self._heartbeat = None
        self._tracker = None  # Set by shard.torch.DataLoader for one iter().
        self._warned_untracked = False
        if self._spec is None:
            # Joining a job it does not create: refuse another dataset's
            # job before waiting for its world.
            self._check_fits(self.client.get_job(job).spec)
        self.rejoin()

    def _job_spec(self, num_replicas):
        """The spec this sampler creates its job with."""
        return job_spec(world_size=num_replicas, seed=self.seed,
                        shuffle=self.shuffle, tail=self._tail,
                        **self._dataset_fields())

    def _dataset_fields(self):
        """The spec's fields that describe the dataset: its size, or a
        mixture's sources and epoch size."""
        if self._mixture is None:
            return dict(dataset_size=self.dataset_size)
        return dict(dataset_size=0, sources=self._mixture.sources,
                    epoch_size=self._mixture.epoch_size)

    def _check_fits(self, spec):
        """ValueError unless the job's `spec` describes this dataset (its
        size, or a mixture's sources) and policy (balanced batches are
        DistributedBatchSampler's)."""
        if spec.HasField("batches") != self._batched:
            raise ValueError(
                f"job {self._job!r} has balanced batches: use "
                f"shard.torch.DistributedBatchSampler" if not self._batched
                else f"job {self._job!r} has no balanced batches: use "
                f"shard.torch.DistributedShardSampler")
        if self._mixture is not None:
            self._mixture.check_fits(self._job, spec)
        elif spec.sources:
            raise ValueError(
                f"job {self._job!r} is a mixture of {len(spec.sources)} "
                f"sources: use shard.torch.DistributedMixtureSampler")
        elif spec.dataset_size != self.dataset_size:
            raise ValueError(
                f"job {self._job!r} has {spec.dataset_size} samples but the "
                f"dataset holds {self.dataset_size}: another dataset's job")

    def rejoin(self):
        """Joins the job's current world again (after ABORTED: a member
        left, restarted or lost its lease, so the world re-formed): new
        rank, world size and generation, and the next iter() resumes at the
        committed position."""
        if self._heartbeat is not None:
            self._heartbeat.stop()
        self.membership = self.client.join(self._job, self._member,
                                           spec=self._spec, wait=self._wait,
                                           rank=self._requested_rank)
        try:
            self._check_fits(self.membership.spec)  # Re-created meanwhile?
        except ValueError:
            self.client.leave(self.membership)
            raise
        if (self._requested_rank is not None and
                self.membership.rank != self._requested_rank):
            warnings.warn(
                f"job {self._job}: member {self._member} asked for rank "
                f"{self._requested_rank} but the coordinator gave rank "
                f"{self.membership.rank} of {self.membership.world_size} "
                f"(another member of the world asked for it first, or the "
                f"world is smaller): the sampler's rank differs from the "
                f"process group's", RuntimeWarning, stacklevel=2)
        self._heartbeat = self.client.start_heartbeat(
            self.membership, self._heartbeat_interval)
        self.rank = self.membership.rank
        self.num_replicas = self.membership.world_size
        self._resume = (self.membership.committed_epoch,
                        self.membership.committed_position)
        self.epoch = self._resume[0]
        self._pass = None

    def __len__(self):
        """This rank's samples per epoch (as DistributedSampler counts)."""
        # A mixture's epoch has its own size (0 for a plain job).
        n = self.membership.spec.epoch_size or self.dataset_size
        w = self.num_replicas
        if self._tail == "uneven":
            return len(range(self.rank, n, w))
        if self._tail == "drop" and n % w != 0:
            return math.ceil((n - w) / w)
        return math.ceil(n / w)

    def set_epoch(self, epoch):
        """The next iter() yields `epoch` (from its committed or loaded
        position, if that is in `epoch`)."""
        self.epoch = epoch
        self._pass = None

    def _start_position(self):
        return self._resume[1] if self.epoch == self._resume[0] else 0

    def __iter__(self):
        finished = self._pass
        if finished is not None and finished.ended:
            self.epoch = finished.epoch + 1
        tracker, self._tracker = self._tracker, None
        current = _Pass(self.epoch, self._start_position(),
                        tracked=tracker is not None)
        if tracker is not None:
            tracker.shard_pass = current
        elif not self._warned_untracked and _iterated_by_worker_loader():
            self._warned_untracked = True
            warnings.warn(
                "DistributedShardSampler in a torch DataLoader with "
                "num_workers > 0: the workers prefetch batches ahead of the "
                "training loop, so the sampler cannot know which samples "
                "were consumed and state_dict()/commit() would skip the "
                "prefetched ones on resume. Use shard.torch.DataLoader (same "
                "arguments), which counts what the loop received.",
                RuntimeWarning, stacklevel=2)
        self._pass = current
        return self._indices(current)

    def _indices(self, current):
        stream = self.client.stream(self.membership, current.epoch,
                                    current.start,
                                    prefetch_bytes=self._prefetch_bytes)
        try:
            for chunk in stream:
                self._raise_if_membership_ended()
                for index in chunk.tolist():
                    current.yielded += 1
                    yield index
            current.end_position = stream.epoch_positions
        finally:
            stream.close()
        if not current.tracked:
            self._end_pass(current)

    def _raise_if_membership_ended(self):
        """Raises the heartbeat's error when it ended the membership for
        good (NotFoundError: the job was deleted; FailedPreconditionError:
        a restarted process of this member joined since): the training loop
        stops instead of running on prefetched indices."""
        error = self._heartbeat.error
        if error is not None and error.code in HEARTBEAT_ENDS:
            raise error

    def _consumed(self, current, samples):
        """shard.torch.DataLoader: the loop received `samples` more."""
        current.consumed += samples

    def _end_pass(self, current):
        """The pass was consumed to its end (the loop is done with every
        index handed out, including any its DataLoader dropped): the next
        iter() starts the next epoch, unless the pass was abandoned for a
        newer one or set_epoch moved on."""
        if current is self._pass:
            current.ended = True
            current.consumed = current.yielded

    @property
    def position(self):
        """Global position in `epoch` after the samples consumed so far
        (every rank consuming as many makes it a commit point; the epoch's
        length once a pass ended); before the epoch's first iter(), where it
        will start."""
        current = self._pass
        if current is None:
            return self._start_position()
        if current.ended and current.end_position is not None:
            # Also on a rank holding fewer samples of an uneven epoch.
            return current.end_position
        samples = current.consumed if current.tracked else current.yielded
        return current.start + samples * self.num_replicas

    def state_dict(self):
        """{"epoch", "position"} to resume from: after a finished pass, the
        next epoch's start."""
        if self._pass is not None and self._pass.ended:
            return {"epoch": self._pass.epoch + 1, "position": 0}
        return {"epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state):
        """The next iter() resumes `state`'s epoch at its position."""
        self._resume = (int(state["epoch"]), int(state["position"]))
        self.epoch = self._resume[0]
        self._pass = None

    def commit(self, epoch=None, position=None):
        """Records with the coordinator that every rank consumed `position`
        (default: this sampler's) of `epoch` (default: the current one).
        Returns the stored (epoch, position), which a new iterator of that
        epoch then starts from."""
        stored = self.client.commit(
            self.membership, self.epoch if epoch is None else epoch,
            self.position if position is None else position)
        self._resume = stored
        return stored

    def close(self, leave=True):
        """Stops the heartbeat and (by default) leaves the job."""
        self._heartbeat.stop()
        if leave:
            self.client.leave(self.membership)


class DistributedEvalSampler(DistributedShardSampler):
    """DistributedShardSampler for evaluation: every sample exactly once
    across ranks, no padding and no dropping (rank r gets order[r::W], so
    counts differ by at most one). Combine per-rank results with
    gather_uneven()."""

    def __init__(self, dataset, **kwargs):
        if kwargs.pop("drop_last", False):
            raise ValueError("DistributedEvalSampler never drops samples")
        super().__init__(dataset, _tail="uneven", **kwargs)


class _Sources:
    """A mixture's sources as a sampler gives them: `dataset` is a torch
    ConcatDataset of the sources' parts in order; a source's size, when 0,
    is its part's length."""

    def __init__(self, dataset, sources, epoch_size):
        self.parts = getattr(dataset, "datasets", None)
        if self.parts is None or len(self.parts) != len(sources):
            raise ValueError(
                f"dataset must be a torch ConcatDataset of the {len(sources)} "
                f"sources, in order")
        self.sources = []
        for given, part in zip(sources, self.parts):
            if given.size not in (0, len(part)):
                raise ValueError(
                    f"source {given.name!r} has size {given.size} but its "
                    f"part of the dataset holds {len(part)} samples")
            filled = type(given)()
            filled.CopyFrom(given)
            filled.size = len(part)
            self.sources.append(filled)
        self.epoch_size = epoch_size

    def check_fits(self, job, spec):
        """ValueError unless the job's sources are these, by name and size,
        in order."""
        def described(sources):
            return [f"{s.name}:{s.size}" for s in sources]
        if described(spec.sources) != described(self.sources):
            raise ValueError(
                f"job {job!r} has the sources "
                f"{described(spec.sources) or 'none (a plain job)'} but the "
                f"sampler's dataset has {described(self.sources)} (name:size, "
                f"in order)")

    def joined_costs(self, costs):
        """The sources' costs (one sequence per source, each as long as
        its part) one after another: the costs of the whole dataset."""
        import numpy as np
        if len(costs) != len(self.sources):
            raise ValueError(
                f"costs of a mixture give one sequence per source: got "
                f"{len(costs)} for {len(self.sources)} sources")
        for source, values in zip(self.sources, costs):
            if len(values) != source.size:
                raise ValueError(
                    f"costs of source {source.name!r} hold {len(values)} "
                    f"values but its part of the dataset holds "
                    f"{source.size} samples")
        return np.concatenate([np.asarray(values) for values in costs])


class DistributedMixtureSampler(DistributedShardSampler):
    """DistributedShardSampler over a mixture (docs/mixtures.md): `dataset`
    is a torch ConcatDataset of the sources in order, and `sources` names
    each part with its share, e.g.

        DistributedMixtureSampler(
            ConcatDataset([web, books]),
            sources=[shard.source("web", weight=0.8),
                     shard.source("books", weight=0.2)],
            epoch_size=100_000, coordinator=..., job=...)

    (a source's size, when 0, is its part's length). Each epoch takes
    exactly its count from every source, a down-sampled source serves every
    sample once before any twice, and everything else (resume, commits,
    elastic worlds, shard.torch.DataLoader) is as with
    DistributedShardSampler. len() is this rank's share of the epoch
    size."""

    def __init__(self, dataset, *, sources, epoch_size=0, **kwargs):
        self._mixture = _Sources(dataset, sources, epoch_size)
        super().__init__(dataset, **kwargs)


class DistributedBatchSampler(DistributedShardSampler):
    """Balanced batches for variable-length data (docs/balanced-batches.md),
    as a torch batch sampler: DataLoader(dataset, batch_sampler=...).

    `costs` gives one cost per sample of `dataset` (its length in tokens:
    a sequence or numpy array of integers), uploaded to the coordinator
    once (by digest: ranks that give the same costs share one upload).
    `batch_tokens` (a budget per micro-batch, with the `cost_model`
    "padded" = count x longest or "sum" = tokens) or `batch_size` (a fixed
    count) and `batch_window` (samples balanced together, 0: the
    coordinator's default) make the job's policy. With packed sequences
    (cost_model "sum", batch_tokens) `attention_length` d sets two
    budgets: `costs` are lengths in tokens, batch_tokens caps each
    micro-batch's tokens (memory) and the steps are balanced by
    L + L^2 / d (time). Every iteration yields
    this rank's micro-batches of the epoch, one list of indices per step;
    every rank gets the same number of steps, and each step's micro-batches
    cost nearly the same across the ranks.

    With `sources` (and `epoch_size`, as DistributedMixtureSampler takes
    them) the job is a mixture with balanced batches: `dataset` is the
    ConcatDataset of the sources' parts and `costs` gives one sequence per
    source, each as long as its part (the coordinator keeps them one after
    another, as the dataset's global indices number the samples).

    Everything else is DistributedShardSampler's: the rank and world come
    from the coordinator, set_epoch() is optional, state_dict() and
    commit() name the position after the last step the loop consumed
    (with shard.torch.DataLoader exactly, also with worker processes), a
    resumed job continues after its last committed step, and a heartbeat
    keeps the membership alive. len() is not known before an epoch was
    served (the steps of a window depend on its samples' costs): it raises
    TypeError. An elastic job (min_replicas / max_replicas) that re-forms
    with another size mid-epoch serves the rest of the epoch re-batched
    for the new world, every sample once (rejoin() after ABORTED, as for
    any job).
    """

    _batched = True

    def __init__(self, dataset, *, costs, batch_tokens=0, batch_size=0,
                 cost_model="padded", batch_window=0, attention_length=0,
                 sources=None, epoch_size=0, **kwargs):
        if sources is not None:
            self._mixture = _Sources(dataset, sources, epoch_size)
            costs = self._mixture.joined_costs(costs)
        elif len(costs) != len(dataset):
            raise ValueError(f"costs holds {len(costs)} values but the "
                             f"dataset holds {len(dataset)} samples")
        if (batch_tokens > 0) == (batch_size > 0):
            raise ValueError("give exactly one of batch_tokens and batch_size")
        if attention_length and (not batch_tokens or cost_model != "sum"):
            raise ValueError(
                "attention_length balances packed sequences by time under a "
                "token budget: it needs batch_tokens and cost_model='sum'")
        if attention_length != int(attention_length) or attention_length < 0:
            raise ValueError(f"attention_length must be a whole number of "
                             f"tokens >= 0 (round a fitted d), got "
                             f"{attention_length!r}")
        self._costs = costs
        self._policy = dict(batch_tokens=batch_tokens, batch_size=batch_size,
                            cost_model=cost_model, batch_window=batch_window,
                            attention_length=int(attention_length))
        self._costs_sha256 = None
        super().__init__(dataset, **kwargs)

    def _job_spec(self, num_replicas):
        if self._costs_sha256 is None:
            self._costs_sha256 = self.client.put_costs(self._costs)
        return job_spec(world_size=num_replicas, seed=self.seed,
                        shuffle=self.shuffle, tail=self._tail,
                        costs_sha256=self._costs_sha256,
                        costs_total=costs_total(self._costs), **self._policy,
                        **self._dataset_fields())

    def rejoin(self):
        try:
            super().rejoin()
        except FailedPreconditionError:
            # Costs no job names are removed after --cost-upload-ttl: a
            # job created that much later than its upload finds them gone.
            # Upload again (nothing moves if it has them) and retry once;
            # any other refusal comes back the same.
            self.client.put_costs(self._costs)
            try:
                super().rejoin()
            except FailedPreconditionError as error:
                if "costs_sha256" not in error.message:
                    raise
                # Another rank created the job meanwhile, with its costs.
                raise ValueError(self._other_costs(error.message)) from error

    def _other_costs(self, detail):
        """What to tell a rank whose costs are not the job's."""
        return (f"job {self._job!r} has other costs than this rank's "
                f"({detail}): every rank and every launch must give the "
                f"same costs. Costs computed from a measurement (d of "
                f"shard.costs.fit_attention_length) differ from process to "
                f"process: measure once and share the result "
                f"(shard.hf.shared_attention_length), or it is another "
                f"dataset's job")

    def _check_fits(self, spec):
        """Also ValueError when the job's costs are not this sampler's."""
        super()._check_fits(spec)
        digest = hashlib.sha256(costs_bytes(self._costs)).hexdigest()
        if spec.batches.costs_sha256 != digest:
            raise ValueError(self._other_costs(
                f"SHA-256 {spec.batches.costs_sha256[:12]}..., these are "
                f"{digest[:12]}..."))

    def __len__(self):
        raise TypeError(
            "DistributedBatchSampler's steps per epoch are known only once "
            "the epoch was served: they depend on the samples' costs")

    def _indices(self, current):
        stream = self.client.stream_batches(
            self.membership, current.epoch, current.start,
            prefetch_bytes=self._prefetch_bytes)
        try:
            for batch, step_end in stream:
                self._raise_if_membership_ended()
                current.step_ends.append(step_end)
                current.yielded += 1
                yield batch.tolist()
            current.end_position = stream.epoch_positions
        finally:
            stream.close()
        if not current.tracked:
            self._end_pass(current)

    def _consumed(self, current, samples):
        """shard.torch.DataLoader: the loop received one more step."""
        current.consumed += 1

    @property
    def position(self):
        """The epoch's position after the last step consumed (the start
        before the first; the epoch's length once a pass ended)."""
        current = self._pass
        if current is None:
            return self._start_position()
        if current.ended and current.end_position is not None:
            return current.end_position
        steps = current.consumed if current.tracked else current.yielded
        return current.step_ends[steps - 1] if steps else current.start
