// Reading one rank's indices of an epoch out of the shared epoch order.
#ifndef COMMON_PLAN_RANK_INDICES_H_
#define COMMON_PLAN_RANK_INDICES_H_

#include <cstdint>

#include "absl/types/span.h"
#include "common/plan/epoch_order.h"
#include "common/plan/shard_layout.h"

namespace shard::plan {

// Writes the rank's indices number offset .. offset + out.size() - 1 (0-based
// within the rank's shard) into `out`. Requires rank < layout.world_size(),
// offset + out.size() <= layout.RankShardSize(rank) and
// order.size() == layout.dataset_size(). Pure; safe from any thread.
void CopyRankIndices(const EpochOrder& order, const ShardLayout& layout,
                     uint64_t rank, uint64_t offset, absl::Span<uint64_t> out);

}  // namespace shard::plan

#endif  // COMMON_PLAN_RANK_INDICES_H_
