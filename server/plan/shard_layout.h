// Tail policy and strided split of one epoch, as DistributedSampler does it.
//
// The tail-adjusted order has total() positions. Position p maps to entry
// p % N of the epoch order (pad repeats the order's start; drop and uneven
// never reach N). Rank r owns positions r, r + W, r + 2W, ... < total().
// Pure value type: no I/O, safe to copy and share.
#ifndef SERVER_PLAN_SHARD_LAYOUT_H_
#define SERVER_PLAN_SHARD_LAYOUT_H_

#include <cstdint>

namespace shard::plan {

enum class Tail { kPad, kDrop, kUneven };

class ShardLayout {
 public:
  // Requires dataset_size > 0 and world_size > 0 (validated by the caller).
  ShardLayout(uint64_t dataset_size, uint64_t world_size, Tail tail);

  uint64_t dataset_size() const { return dataset_size_; }
  uint64_t world_size() const { return world_size_; }
  Tail tail() const { return tail_; }

  // Length of the tail-adjusted order: W * ceil(N / W) for pad,
  // W * floor(N / W) for drop, N for uneven.
  uint64_t total() const { return total_; }

  // Number of positions rank `rank` owns; requires rank < world_size().
  uint64_t RankShardSize(uint64_t rank) const;

  // Position of the rank's k-th index (0-based) in the tail-adjusted order.
  uint64_t PositionOf(uint64_t rank, uint64_t k) const {
    return rank + k * world_size_;
  }

  // Entry of the epoch order that position p refers to; requires p < total().
  uint64_t OrderIndexOf(uint64_t position) const {
    return position < dataset_size_ ? position : position % dataset_size_;
  }

 private:
  uint64_t dataset_size_;
  uint64_t world_size_;
  Tail tail_;
  uint64_t total_;
};

}  // namespace shard::plan

#endif  // SERVER_PLAN_SHARD_LAYOUT_H_
