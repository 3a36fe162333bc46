"""torch.distributed.Store over the coordinator's rendezvous space."""
from datetime import timedelta

import torch.distributed as dist

from shard.errors import ShardError


class CoordinatorStore(dist.Store):
    """A c10d Store over the key-value space of the joined sampler's (or
    Membership's) generation, so that

        dist.init_process_group("gloo", store=CoordinatorStore(sampler),
                                rank=sampler.rank,
                                world_size=sampler.num_replicas)

    forms the process group with no MASTER_ADDR/MASTER_PORT. The space
    lives as long as the generation: after a membership change the calls
    raise ShardError(ABORTED) and the process group must be formed again.
    """

    def __init__(self, sampler_or_membership, client=None,
                 timeout=timedelta(minutes=5)):
        super().__init__()
        membership = getattr(sampler_or_membership, "membership",
                             sampler_or_membership)
        self._client = client or sampler_or_membership.client
        self._membership = membership
        self._timeout = timeout

    def set_timeout(self, timeout):
        self._timeout = timeout

    def set(self, key, value):
        if isinstance(value, str):
            value = value.encode()
        self._client.store_set(self._membership, key, bytes(value))

    def get(self, key):
        value = self._client.store_get(self._membership, key,
                                       self._timeout.total_seconds())
        if value is None:
            raise RuntimeError(f"store key {key!r} not set within "
                               f"{self._timeout}")
        return value

    def add(self, key, value):
        return self._client.store_add(self._membership, key, value)

    def compare_set(self, key, expected, desired):
        return self._client.store_compare_set(
            self._membership, key, _bytes(expected), _bytes(desired))

    def delete_key(self, key):
        return self._client.store_delete(self._membership, key)

    def num_keys(self):
        return self._client.store_count(self._membership)

    def check(self, keys):
        return self._client.store_wait(self._membership, keys, 0)

    def wait(self, keys, timeout=None):
        timeout = timeout or self._timeout
        if not self._client.store_wait(self._membership, keys,
                                       timeout.total_seconds()):
            raise RuntimeError(f"store keys {list(keys)} not set within "
                               f"{timeout}")


def _bytes(value):
    return value.encode() if isinstance(value, str) else bytes(value)


__all__ = ["CoordinatorStore", "ShardError"]
