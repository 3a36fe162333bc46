"""Python client of the shard data-sharding coordinator (shardd).

    import shard
    client = shard.Client("shardd:7070")
    membership = client.join("my-job", "worker-0",
                             spec=shard.job_spec(dataset_size=N, world_size=W))
    for chunk in client.stream(membership, epoch=0):
        ...  # numpy uint64 arrays of this rank's sample indices

`shard.torch` holds the PyTorch pieces: DistributedShardSampler (a
DistributedSampler drop-in), DistributedEvalSampler, gather_uneven and
CoordinatorStore. Errors are shard.ShardError, raised as the subclass of
their status code (shard.errors.NotFoundError, AbortedError, ...). The
package is typed (py.typed).
"""
from shard.client import Client, Membership, costs_total, job_spec, source
from shard.errors import ShardError

__version__ = "0.1.0"
__all__ = ["Client", "Membership", "ShardError", "costs_total", "job_spec",
           "source", "__version__"]
