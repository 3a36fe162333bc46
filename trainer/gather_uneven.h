// All-gather of per-rank results whose lengths differ (uneven evaluation
// shards): sizes first, then the values padded to the largest size, then
// trimmed, so the result holds exactly the sum of the ranks' lengths.
#ifndef TRAINER_GATHER_UNEVEN_H_
#define TRAINER_GATHER_UNEVEN_H_

#include "trainer/gradient_sync.h"

namespace shard::trainer {

// `local` is a 1-D tensor (any length, including 0, same dtype on every
// rank, on a device the group's backend accepts: CPU for Gloo, CUDA for
// NCCL). Returns on every rank the concatenation of all ranks' tensors in
// rank order. Collective: every rank must call it.
torch::Tensor GatherUneven(const torch::Tensor& local,
                           const ProcessGroupPtr& group);

}  // namespace shard::trainer

#endif  // TRAINER_GATHER_UNEVEN_H_
