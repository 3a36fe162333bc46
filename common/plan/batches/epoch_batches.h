// The windows of one world's part of an epoch of a job with balanced
// batches: the world serves the samples at the positions of its rest
// (epoch_rest.h; the whole epoch for a world that starts it) from epoch
// position `base` on. Window i holds the rest's samples i x S .. (i + 1) x
// S - 1 (S = BatchPolicy::WindowSamples(W)), the last one what is left, and
// serves epoch positions base + i x S on. S is a multiple of W; a last
// window that is not (fewer than W samples could not give every rank a
// micro-batch, and W k + j samples that each fill a token budget alone
// could not make whole steps under it) is made one: the pad tail fills it
// to the next multiple of W with positions after the order's end (which
// read its first entries again, as ShardLayout's pad does), the drop tail
// leaves out its last samples down to a multiple of W (at most W - 1
// either way, as DistributedSampler's tails). Windows
// are numbered across the epoch (their step order's key): a world that
// starts the epoch numbers its windows from 0, a later one from one past
// the window its predecessor stopped in (epoch_worlds.h).
// Pure value type; copies share the rest.
#ifndef COMMON_PLAN_BATCHES_EPOCH_BATCHES_H_
#define COMMON_PLAN_BATCHES_EPOCH_BATCHES_H_

#include <cstdint>
#include <functional>

#include "absl/types/span.h"
#include "common/plan/batches/batch_policy.h"
#include "common/plan/batches/cost_table.h"
#include "common/plan/batches/epoch_rest.h"
#include "common/plan/batches/window_batches.h"
#include "common/plan/layouts/shard_layout.h"
#include "common/plan/orders/epoch_order.h"

namespace shard::plan {

class EpochBatches {
 public:
  // A world that starts the epoch: its rest is the whole order. Requires
  // order_size >= 1, world_size >= 1 and tail kPad or kDrop.
  EpochBatches(uint64_t order_size, uint32_t world_size, Tail tail,
               const BatchPolicy& policy);
  // A world that serves `rest` from epoch position `base`, numbering its
  // windows from `first_window`. An empty rest (or, with the drop tail,
  // one of fewer than W samples) serves nothing: total() == base.
  EpochBatches(const EpochRest& rest, uint32_t world_size, Tail tail,
               const BatchPolicy& policy, uint64_t base, uint64_t first_window);

  // The samples a world of `world_size` serves of `left` (the tail rule
  // applied to its last window).
  static uint64_t Served(uint64_t left, uint32_t world_size, Tail tail,
                         const BatchPolicy& policy);

  uint64_t windows() const { return windows_; }
  // The epoch position after this world's last window: base() plus the
  // samples of every window.
  uint64_t total() const { return base_ + rest_.size(); }
  uint64_t base() const { return base_; }
  uint64_t WindowBegin(uint64_t window) const {
    return base_ + window * window_samples_;
  }
  uint64_t WindowEnd(uint64_t window) const {
    return window + 1 == windows_ ? total() : WindowBegin(window + 1);
  }
  // The window holding position p; requires base() <= p < total().
  uint64_t WindowOf(uint64_t position) const {
    return (position - base_) / window_samples_;
  }
  // One past the largest order position window `window` reads: its
  // entries of the order must be final before it is arranged (capped at
  // the order's size by the caller, server/plans/batch_walk.h's
  // LastOrderEntryOf; padding reads the order's start).
  uint64_t OrderEndOf(uint64_t window) const {
    return rest_.At(WindowEnd(window) - base_ - 1) + 1;
  }
  // The order positions this world serves (padding included).
  const EpochRest& rest() const { return rest_; }
  // The epoch-wide number of this world's window `window`.
  uint64_t NumberOf(uint64_t window) const { return first_window_ + window; }

  // Fills costs[k] with the cost of the sample at order position
  // positions[k] (a position may be >= the order size: padding).
  using CostsOf = std::function<void(absl::Span<const uint64_t> positions,
                                     absl::Span<uint32_t> costs)>;

  // Window `window` arranged, its costs from `costs_of` (asked once, for
  // the whole window). Its entries' positions are order positions.
  WindowBatches Arrange(uint64_t window, const CostsOf& costs_of, uint64_t seed,
                        uint64_t epoch) const;

  uint32_t world_size() const { return world_size_; }

  // The CostsOf that reads `costs` (one per sample) for the samples at
  // `order`'s positions, a position past the order's end reading it from
  // its start again. Both must outlive the returned function.
  static CostsOf CostsInOrder(const EpochOrder& order, const CostTable& costs);

 private:
  uint32_t world_size_;
  BatchPolicy policy_;
  uint64_t window_samples_;
  uint64_t base_;
  uint64_t first_window_;
  EpochRest rest_;  // with the tail rule applied
  uint64_t windows_;
};

}  // namespace shard::plan

#endif  // COMMON_PLAN_BATCHES_EPOCH_BATCHES_H_
