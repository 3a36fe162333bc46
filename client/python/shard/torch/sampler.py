"""DistributedSampler drop-ins fed by the coordinator."""
import math
import os

from shard.client import Client, default_member_id, job_spec


class DistributedShardSampler:
    """DistributedSampler's arguments and indices, from the coordinator.

    Joins job `job` on `coordinator` (an address or a shard.Client) as
    `member` (default: host name and local rank), creating the job from
    len(dataset), num_replicas, shuffle, seed and drop_last if it does not
    exist (with num_replicas=None the job must exist or WORLD_SIZE gives the
    world size). `rank` and `num_replicas` come from the coordinator.

    Each iter() yields the next epoch's indices for this rank as Python ints,
    exactly DistributedSampler's after set_epoch(epoch); the first epoch is
    the job's committed one (a restarted job resumes where it committed).
    set_epoch(e) selects the epoch the next iter() yields; it is never
    required. state_dict()/load_state_dict() capture and restore (epoch,
    position) for mid-epoch resume; commit() records the position with the
    coordinator. A heartbeat thread keeps the membership alive.
    """

    _tail_for_drop_last = {False: "pad", True: "drop"}

    def __init__(self, dataset, *, coordinator, job, member=None,
                 num_replicas=None, shuffle=True, seed=0, drop_last=False,
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
        if num_replicas is None and "WORLD_SIZE" in os.environ:
            num_replicas = int(os.environ["WORLD_SIZE"])
        self._spec = None
        if num_replicas is not None:
            self._spec = job_spec(self.dataset_size, num_replicas, seed=seed,
                                  shuffle=shuffle, tail=self._tail)
        self._job = job
        self._member = member or default_member_id()
        self._wait = wait
        self._heartbeat_interval = heartbeat_interval
        self._heartbeat = None
        self.rejoin()

    def rejoin(self):
        """Joins the job's current world again (after ABORTED: a member
        left, restarted or lost its lease, so the world re-formed): new
        rank, world size and generation, and the next iter() resumes at the
        committed position."""
        if self._heartbeat is not None:
            self._heartbeat.stop()
        self.membership = self.client.join(self._job, self._member,
                                           spec=self._spec, wait=self._wait)
        self._heartbeat = self.client.start_heartbeat(
            self.membership, self._heartbeat_interval)
        self.rank = self.membership.rank
        self.num_replicas = self.membership.world_size
        self.epoch = self.membership.committed_epoch
        self._next_epoch = self.epoch
        self._resume = (self.membership.committed_epoch,
                        self.membership.committed_position)
        # Before the first iter(), `position` is where it will start.
        self._start = self._resume[1]
        self._yielded = 0

    def __len__(self):
        """This rank's samples per epoch (as DistributedSampler counts)."""
        n, w = self.dataset_size, self.num_replicas
        if self._tail == "uneven":
            return len(range(self.rank, n, w))
        if self._tail == "drop" and n % w != 0:
            return math.ceil((n - w) / w)
        return math.ceil(n / w)

    def set_epoch(self, epoch):
        self._next_epoch = epoch

    def __iter__(self):
        epoch = self._next_epoch
        self._next_epoch = epoch + 1
        self.epoch = epoch
        self._start = self._resume[1] if epoch == self._resume[0] else 0
        self._yielded = 0
        stream = self.client.stream(self.membership, epoch, self._start,
                                    prefetch_bytes=self._prefetch_bytes)
        try:
            for chunk in stream:
                for index in chunk.tolist():
                    self._yielded += 1
                    yield index
        finally:
            stream.close()

    @property
    def position(self):
        """Global position in the epoch after the indices yielded so far
        (every rank yielding as many makes it a commit point); before the
        first iter(), where it will start (the committed position)."""
        return self._start + self._yielded * self.num_replicas

    def state_dict(self):
        return {"epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state):
        """The next iter() resumes `state`'s epoch at its position."""
        self._resume = (int(state["epoch"]), int(state["position"]))
        self.epoch = self._next_epoch = self._resume[0]
        self._start, self._yielded = self._resume[1], 0

    def commit(self, epoch=None, position=None):
        """Records with the coordinator that every rank consumed `position`
        (default: this sampler's) of `epoch` (default: the current one).
        Returns the stored (epoch, position)."""
        return self.client.commit(
            self.membership, self.epoch if epoch is None else epoch,
            self.position if position is None else position)

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
