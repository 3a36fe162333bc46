"""torch.distributed.Store over the coordinator's rendezvous space."""
import functools
import time
from datetime import timedelta

import grpc
import torch.distributed as dist

from shard.errors import ShardError


def _remembering_errors(method):
    """Keeps the coordinator's error in `last_error` before it propagates:
    torch turns an exception of a Store method called from C++ into a
    RuntimeError that keeps only the text. With a `renew` callable, a call
    refused ABORTED is made once more in the membership renew() returns
    (unless it returns None)."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except ShardError as error:
            renewed = (self._renew() if self._renew is not None and
                       error.code == grpc.StatusCode.ABORTED else None)
            if renewed is None:
                self.last_error = error
                raise
        self._membership = renewed
        try:
            return method(self, *args, **kwargs)
        except ShardError as error:
            self.last_error = error
            raise
    return wrapper


class CoordinatorStore(dist.Store):
    """A c10d Store over the key-value space of the joined sampler's (or
    Membership's) generation, so that

        dist.init_process_group("gloo", store=CoordinatorStore(sampler),
                                rank=sampler.rank,
                                world_size=sampler.num_replicas)

    forms the process group with no MASTER_ADDR/MASTER_PORT. The space
    lives as long as the generation: after a membership change the calls
    raise ShardError(ABORTED) and the process group must be formed again.
    `last_error` is the last ShardError a call raised (None before any),
    also when torch passed it on as a RuntimeError. `renew` (for a caller
    that can join the same world again, e.g. torchrun's agents after a
    coordinator restart lost the round's keys) returns the membership in
    which a call refused ABORTED is made once more, or None.
    """

    def __init__(self, sampler_or_membership, client=None,
                 timeout=timedelta(minutes=5), renew=None):
        super().__init__()
        membership = getattr(sampler_or_membership, "membership",
                             sampler_or_membership)
        self._client = client or sampler_or_membership.client
        self._membership = membership
        self._timeout = timeout
        self._renew = renew
        self.last_error = None

    def set_timeout(self, timeout):
        self._timeout = timeout

    @_remembering_errors
    def set(self, key, value):
        if isinstance(value, str):
            value = value.encode()
        self._client.store_set(self._membership, key, bytes(value))

    @_remembering_errors
    def get(self, key):
        began = time.monotonic()
        value = self._client.store_get(self._membership, key,
                                       self._timeout.total_seconds())
        if value is None:
            raise RuntimeError(
                f"store key {key!r} not set after waiting "
                f"{time.monotonic() - began:.1f} s (store timeout "
                f"{self._timeout})")
        return value

    @_remembering_errors
    def add(self, key, value):
        return self._client.store_add(self._membership, key, value)

    @_remembering_errors
    def compare_set(self, key, expected, desired):
        return self._client.store_compare_set(
            self._membership, key, _bytes(expected), _bytes(desired))

    @_remembering_errors
    def delete_key(self, key):
        return self._client.store_delete(self._membership, key)

    @_remembering_errors
    def num_keys(self):
        return self._client.store_count(self._membership)

    @_remembering_errors
    def check(self, keys):
        return self._client.store_wait(self._membership, keys, 0)

    @_remembering_errors
    def wait(self, keys, timeout=None):
        timeout = timeout or self._timeout
        began = time.monotonic()
        if not self._client.store_wait(self._membership, keys,
                                       timeout.total_seconds()):
            raise RuntimeError(
                f"store keys {list(keys)} not all set after waiting "
                f"{time.monotonic() - began:.1f} s (timeout {timeout})")


def init_process_group(sampler, backend=None, **kwargs):
    """torch.distributed.init_process_group through the coordinator for
    the sampler's world (Gloo, or NCCL when CUDA is available, unless
    `backend` says). Processes of a job start and restart in any order: when
    the world re-forms during the rendezvous (ABORTED), the sampler joins
    the new world and the rendezvous starts again."""
    import torch
    backend = backend or ("nccl" if torch.cuda.is_available() else "gloo")
    while True:
        groups_before = _group_count()
        store = CoordinatorStore(sampler)
        try:
            dist.init_process_group(backend, store=store, rank=sampler.rank,
                                    world_size=sampler.num_replicas, **kwargs)
            return
        except (ShardError, RuntimeError) as error:
            cause = error if isinstance(error, ShardError) else store.last_error
            if cause is None or cause.code != grpc.StatusCode.ABORTED:
                raise
            if dist.is_initialized():
                dist.destroy_process_group()
            # The failed attempt counted a group; the rendezvous keys of the
            # next one (store_based_barrier_key:N) must match the ranks that
            # form their group at the first attempt.
            _set_group_count(groups_before)
            sampler.rejoin()


def _group_count():
    """torch's count of process groups created (1.13: a module global;
    2.x: _world.group_count)."""
    c10d = dist.distributed_c10d
    world = getattr(c10d, "_world", None)
    if world is not None and hasattr(world, "group_count"):
        return world.group_count
    return c10d._group_count


def _set_group_count(count):
    c10d = dist.distributed_c10d
    world = getattr(c10d, "_world", None)
    if world is not None and hasattr(world, "group_count"):
        world.group_count = count
    else:
        c10d._group_count = count


def _bytes(value):
    return value.encode() if isinstance(value, str) else bytes(value)


__all__ = ["CoordinatorStore", "init_process_group"]
