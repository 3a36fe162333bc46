#include "common/plan/layouts/shard_layout.h"

#include <algorithm>

namespace shard::plan {

// torch computes num_samples with math.ceil on a float quotient; for
// drop_last it is ceil((N - W) / W), which equals floor(N / W) for every
// N >= 0 (including N < W, where it is 0). Integer arithmetic is exact where
// the float is (N < 2^53) and stays exact beyond.
ShardLayout::ShardLayout(uint64_t dataset_size, uint64_t world_size, Tail tail,
                         uint64_t base)
    : dataset_size_(dataset_size),
      world_size_(world_size),
      tail_(tail),
      base_(base) {
  // A padded last epoch may end past N; a world re-formed there has nothing
  // left to split.
  const uint64_t remaining = base < dataset_size ? dataset_size - base : 0;
  const uint64_t floor_per_rank = remaining / world_size;
  const uint64_t ceil_per_rank =
      floor_per_rank + (remaining % world_size != 0 ? 1 : 0);
  switch (tail) {
    case Tail::kPad:
      total_ = base + ceil_per_rank * world_size;
      break;
    case Tail::kDrop:
      total_ = base + floor_per_rank * world_size;
      break;
    case Tail::kUneven:
      total_ = std::max(dataset_size, base);
      break;
  }
}

ShardLayout ShardLayout::Batched(uint64_t dataset_size, uint64_t world_size,
                                 Tail tail, uint64_t total, uint64_t base) {
  ShardLayout layout(dataset_size, world_size, tail, base);
  layout.total_ = std::max(total, base);
  layout.batched_ = true;
  return layout;
}

uint64_t ShardLayout::RankShardSize(uint64_t rank) const {
  if (batched_) return 0;
  const uint64_t length = total_ - base_;
  if (rank >= length) return 0;
  return (length - rank + world_size_ - 1) / world_size_;
}

}  // namespace shard::plan
