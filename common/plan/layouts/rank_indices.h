// Reading one rank's indices of an epoch out of the shared epoch order.
#ifndef COMMON_PLAN_LAYOUTS_RANK_INDICES_H_
#define COMMON_PLAN_LAYOUTS_RANK_INDICES_H_

#include <cstdint>

#include "absl/types/span.h"
#include "common/plan/layouts/shard_layout.h"
#include "common/plan/orders/epoch_order.h"

namespace shard::plan {

// Writes the rank's indices number offset .. offset + out.size() - 1 (0-based
// within the rank's shard) into `out`. Requires rank < layout.world_size(),
// offset + out.size() <= layout.RankShardSize(rank) and
// order.size() == layout.dataset_size(). Pure; safe from any thread.
void CopyRankIndices(const EpochOrder& order, const ShardLayout& layout,
                     uint64_t rank, uint64_t offset, absl::Span<uint64_t> out);

// How many of the rank's indices from `offset` on read only order entries
// below `final_prefix` (an order being shuffled: see
// EpochOrder::FinalPrefix), up to the end of its shard.
uint64_t IndicesReadable(const ShardLayout& layout, uint64_t rank,
                         uint64_t offset, uint64_t final_prefix);

// One more than the largest order entry the rank's indices offset ..
// offset + count - 1 read (0 for none): once the order's final prefix
// reaches it, they can be copied. Requires offset + count <=
// layout.RankShardSize(rank).
uint64_t EntriesNeeded(const ShardLayout& layout, uint64_t rank,
                       uint64_t offset, uint64_t count);

}  // namespace shard::plan

#endif  // COMMON_PLAN_LAYOUTS_RANK_INDICES_H_
