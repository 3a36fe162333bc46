#include "common/plan/rank_indices.h"

namespace shard::plan {

void CopyRankIndices(const EpochOrder& order, const ShardLayout& layout,
                     uint64_t rank, uint64_t offset, absl::Span<uint64_t> out) {
  const uint64_t stride = layout.world_size();
  uint64_t position = layout.PositionOf(rank, offset);
  for (uint64_t& index : out) {
    index = layout.OrderIndexOf(position);
    position += stride;
  }
  order.AtMany(out);
}

}  // namespace shard::plan
