// Tail policy and strided split of one epoch, as DistributedSampler does it,
// optionally from a base position (elastic re-sharding).
//
// With base 0 this is DistributedSampler: the tail-adjusted order has
// total() positions, position p maps to entry p % N of the epoch order (pad
// repeats the order's start; drop and uneven never reach N), and rank r owns
// positions r, r + W, r + 2W, ... < total().
// With base b (the committed position when the world changed), the
// remaining R = N - b entries of the order are re-split over W with the tail
// policy applied to the remainder: pad to a multiple of W, drop to a
// multiple of W, or keep all (uneven); rank r owns b + r, b + r + W, ...
// < total(). For b a multiple of the same W this equals the base-0 layout
// from b on.
// A balanced-batch epoch (epoch_batches.h) is a layout of another kind
// (Batched()): its positions count samples in steps whose ends only the
// arranged windows know, so every position from base to total() may be a
// commit point (the stream refuses a start that is not a step's end), and
// a rank's share is not known in advance (RankShardSize() is 0).
// Pure value type: no I/O, safe to copy and share.
#ifndef COMMON_PLAN_LAYOUTS_SHARD_LAYOUT_H_
#define COMMON_PLAN_LAYOUTS_SHARD_LAYOUT_H_

#include <cstdint>

namespace shard::plan {

enum class Tail { kPad, kDrop, kUneven };

class ShardLayout {
 public:
  // Requires dataset_size > 0 and world_size > 0 (validated by the caller).
  // A base at or past dataset_size (the committed end of a padded last
  // epoch) gives an empty layout: total() == base.
  ShardLayout(uint64_t dataset_size, uint64_t world_size, Tail tail,
              uint64_t base = 0);

  // A balanced-batch epoch of `total` positions (EpochBatches::total())
  // for `world_size` ranks, its current world starting at `base`.
  static ShardLayout Batched(uint64_t dataset_size, uint64_t world_size,
                             Tail tail, uint64_t total, uint64_t base);
  bool batched() const { return batched_; }

  uint64_t dataset_size() const { return dataset_size_; }
  uint64_t world_size() const { return world_size_; }
  Tail tail() const { return tail_; }
  // First position of this layout.
  uint64_t base() const { return base_; }

  // End position of the epoch: base + W * ceil(R / W) for pad,
  // base + W * floor(R / W) for drop, max(N, base) for uneven
  // (R = N - base, or 0 when base >= N).
  uint64_t total() const { return total_; }

  // Number of positions rank `rank` owns (0 for a batched layout);
  // requires rank < world_size().
  uint64_t RankShardSize(uint64_t rank) const;

  // Position of the rank's k-th index (0-based) in the tail-adjusted order.
  uint64_t PositionOf(uint64_t rank, uint64_t k) const {
    return base_ + rank + k * world_size_;
  }

  // Whether a global position is a round boundary of this layout: base + a
  // multiple of W below total(), or total() itself (the end of the epoch,
  // which for uneven need not be a whole round).
  bool IsRoundBoundary(uint64_t position) const {
    return position == total_ ||
           (position >= base_ && position < total_ &&
            (batched_ || (position - base_) % world_size_ == 0));
  }

  // Entry of the epoch order that position p refers to; requires p < total().
  uint64_t OrderIndexOf(uint64_t position) const {
    return position < dataset_size_ ? position : position % dataset_size_;
  }

 private:
  uint64_t dataset_size_;
  uint64_t world_size_;
  Tail tail_;
  uint64_t base_;
  uint64_t total_;
  bool batched_ = false;
};

}  // namespace shard::plan

#endif  // COMMON_PLAN_LAYOUTS_SHARD_LAYOUT_H_
