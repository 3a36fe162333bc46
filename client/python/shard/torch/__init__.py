"""PyTorch pieces of the shard client.

DistributedShardSampler is a drop-in for
torch.utils.data.distributed.DistributedSampler whose indices come from the
coordinator (the same indices, bit for bit), DistributedEvalSampler splits
every sample exactly once across ranks (no padding),
DistributedMixtureSampler serves a mixture of the parts of a ConcatDataset
with exact per-source counts (docs/mixtures.md), DistributedBatchSampler
serves balanced micro-batches of variable-length data as a batch sampler
(docs/balanced-batches.md), gather_uneven collects
variable-length per-rank results, and CoordinatorStore lets
init_process_group form through the coordinator (no MASTER_ADDR/PORT);
shard.torch.init_process_group(sampler) does so and re-joins when the world
re-forms meanwhile (processes starting or restarting in any order).
DataLoader is torch's DataLoader that tells the sampler which samples the
training loop received, so that positions stay exact with worker processes.
"""
from shard.torch.gather import gather_uneven
from shard.torch.loader import DataLoader
from shard.torch.sampler import (DistributedBatchSampler,
                                 DistributedEvalSampler,
                                 DistributedMixtureSampler,
                                 DistributedShardSampler)
from shard.torch.store import CoordinatorStore, init_process_group

__all__ = ["CoordinatorStore", "DataLoader", "DistributedBatchSampler",
           "DistributedEvalSampler",
           "DistributedMixtureSampler", "DistributedShardSampler",
           "gather_uneven", "init_process_group"]
