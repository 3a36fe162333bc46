"""shard.torch.DataLoader: a torch DataLoader whose sampler position counts
the samples the training loop received, not the indices its workers
prefetched."""
import collections
import functools
import os

import torch.utils.data

from shard import _compat, _trainer_watch
from shard.torch.sampler import DistributedShardSampler


class _PassRecord:
    """What one iteration of the loader pulled from the sampler: the
    sampler's pass and the sample count of each index batch, in order."""

    def __init__(self):
        self.shard_pass = None
        self.sizes = collections.deque()


class _CountingIndexSampler:
    """Wraps the loader's index sampler (its batch sampler, or the sampler
    itself without batching) to note how many samples each item holds."""

    def __init__(self, inner, sampler):
        self._inner = inner
        self._sampler = sampler
        self.current = None  # The _PassRecord of the latest iteration.

    def __len__(self):
        return len(self._inner)

    def __iter__(self):
        record = _PassRecord()
        self.current = record
        self._sampler._tracker = record
        for item in self._inner:
            record.sizes.append(len(item) if hasattr(item, "__len__") else 1)
            yield item


class _ConsumedCountingIterator:
    """The loader's iterator; reports each batch it hands to the loop."""

    def __init__(self, base, index_sampler, sampler):
        self._base = base
        self._index_sampler = index_sampler
        self._sampler = sampler
        self._record = None

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._base)

    def __next__(self):
        try:
            batch = next(self._base)
        except StopIteration:
            record = self._record or self._index_sampler.current
            if record is not None and record.shard_pass is not None:
                self._sampler._end_pass(record.shard_pass)
            raise
        if self._record is None:
            self._record = self._index_sampler.current
        # Batches arrive in the order their indices were drawn (the loader
        # keeps order), so the oldest noted size is this batch's.
        self._sampler._consumed(self._record.shard_pass,
                                self._record.sizes.popleft())
        return batch


class DataLoader(torch.utils.data.DataLoader):
    """torch.utils.data.DataLoader (same arguments) for a
    DistributedShardSampler (as `sampler`, or inside `batch_sampler`).

    Worker processes fetch prefetch_factor * num_workers batches ahead of
    the training loop; this loader tells the sampler how many samples the
    loop actually received, so that sampler.position, sampler.state_dict(),
    sampler.commit() and this loader's state_dict() record consumed
    samples for any num_workers and prefetch_factor. A pass ends (and the
    sampler's epoch advances) when the loop has received the loader's last
    batch. Batches must arrive in order (in_order=False is refused), and
    where forking a process that uses gRPC hangs (Python 3.14's grpcio;
    shard._compat) workers started by fork are refused with a ValueError
    naming the start methods to use. Workers started otherwise (forkserver,
    spawn) exit once the process that made the loader is gone (shard.
    _trainer_watch): a trainer killed alone leaves none behind.
    accelerate's Accelerator.prepare() returns it as it is (the coordinator
    sharded it already; batches stay where collate_fn puts them: move them
    to accelerator.device). With any other sampler it is otherwise a plain
    DataLoader.
    """

    def __init__(self, *args, **kwargs):
        if kwargs.get("in_order", True) is False:
            raise ValueError(
                "shard.torch.DataLoader needs in_order=True: a position "
                "counts a prefix of the epoch's samples")
        super().__init__(*args, **kwargs)
        if self.shard_sampler is not None:
            _compat.check_worker_start(self.num_workers,
                                       self.multiprocessing_context)
            # accelerate's prepare() returns a loader so marked as it is:
            # it would otherwise shard this rank's batches again (each rank
            # training every W-th of its own) in a new loader that counts
            # nothing the loop receives.
            self._is_accelerate_prepared = True
        if (self.num_workers > 0 and
                _compat.start_method(self.multiprocessing_context) != "fork"):
            # Not the trainer's children: they must watch it themselves.
            self.worker_init_fn = functools.partial(
                _trainer_watch.exit_with_trainer, os.getpid(),
                self.worker_init_fn)

    @property
    def shard_sampler(self):
        """The DistributedShardSampler this loader draws from, or None."""
        for candidate in (self.batch_sampler,
                          getattr(self.batch_sampler, "sampler", None),
                          self.sampler):
            if isinstance(candidate, DistributedShardSampler):
                return candidate
        return None

    @property
    def _index_sampler(self):
        inner = super()._index_sampler
        sampler = self.shard_sampler
        if sampler is None:
            return inner
        return _CountingIndexSampler(inner, sampler)

    def __iter__(self):
        base = super().__iter__()
        sampler = self.shard_sampler
        if sampler is None:
            return base
        index_sampler = getattr(base, "_index_sampler", None)
        if not isinstance(index_sampler, _CountingIndexSampler):
            raise RuntimeError(
                "this torch version's DataLoader iterator has no "
                "_index_sampler; shard.torch.DataLoader cannot count "
                "consumed samples")
        return _ConsumedCountingIterator(base, index_sampler, sampler)

    def set_epoch(self, epoch):
        """The sampler's set_epoch, where it has one (Hugging Face Trainer
        and accelerate call it on the loader)."""
        sampler = self.shard_sampler
        if sampler is None:
            sampler = self.sampler
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)

    def state_dict(self):
        """The sampler's (epoch, position) after the samples the loop
        received."""
        return self._required_sampler().state_dict()

    def load_state_dict(self, state):
        """The next iteration resumes at `state` (see state_dict())."""
        self._required_sampler().load_state_dict(state)

    def _required_sampler(self):
        sampler = self.shard_sampler
        if sampler is None:
            raise TypeError("state_dict() needs a DistributedShardSampler "
                            "as the loader's sampler")
        return sampler
