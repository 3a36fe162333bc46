#include "common/plan/layouts/rank_indices.h"

#include <algorithm>

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

uint64_t IndicesReadable(const ShardLayout& layout, uint64_t rank,
                         uint64_t offset, uint64_t final_prefix) {
  const uint64_t left = layout.RankShardSize(rank) - offset;
  const uint64_t n = layout.dataset_size();
  if (final_prefix >= n) return left;
  // Below N a position is its own entry, and the rank's positions grow by
  // W: count those below the final prefix.
  const uint64_t stride = layout.world_size();
  const uint64_t first = layout.PositionOf(rank, offset);
  auto below = [&](uint64_t end) {
    return first >= end ? 0
                        : std::min(left, (end - first + stride - 1) / stride);
  };
  uint64_t readable = below(final_prefix);
  if (readable < below(n)) return readable;
  // Past N, padding wraps to early entries (at most one position per rank).
  while (readable < left && layout.OrderIndexOf(layout.PositionOf(
                                rank, offset + readable)) < final_prefix) {
    ++readable;
  }
  return readable;
}

uint64_t EntriesNeeded(const ShardLayout& layout, uint64_t rank,
                       uint64_t offset, uint64_t count) {
  if (count == 0) return 0;
  // The rank's positions below N grow with k; padding adds fewer than W
  // positions past N, so at most the rank's last one wraps to an early
  // entry: the largest entry is at one of the last two positions.
  const uint64_t last = offset + count - 1;
  uint64_t largest = layout.OrderIndexOf(layout.PositionOf(rank, last));
  if (count >= 2) {
    largest = std::max(largest,
                       layout.OrderIndexOf(layout.PositionOf(rank, last - 1)));
  }
  return largest + 1;
}

}  // namespace shard::plan
