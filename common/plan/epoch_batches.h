// The windows of one epoch of a job with balanced batches, for one world:
// window i holds the epoch order's positions i x S .. (i + 1) x S - 1
// (S = BatchPolicy::WindowSamples(W)), the last one what is left. A last
// window of fewer than W samples cannot give every rank a micro-batch: the
// pad tail fills it to W with the positions after the order's end (which
// read its first entries again, as ShardLayout's pad does), the drop tail
// leaves it out. Pure value type.
#ifndef COMMON_PLAN_EPOCH_BATCHES_H_
#define COMMON_PLAN_EPOCH_BATCHES_H_

#include <cstdint>
#include <functional>

#include "absl/types/span.h"
#include "common/plan/batch_policy.h"
#include "common/plan/cost_table.h"
#include "common/plan/epoch_order.h"
#include "common/plan/shard_layout.h"
#include "common/plan/window_batches.h"

namespace shard::plan {

class EpochBatches {
 public:
  // Requires order_size >= 1, world_size >= 1 and tail kPad or kDrop.
  EpochBatches(uint64_t order_size, uint32_t world_size, Tail tail,
               const BatchPolicy& policy);

  uint64_t windows() const { return windows_; }
  // Positions the epoch serves: every window's samples.
  uint64_t total() const { return total_; }
  uint64_t WindowBegin(uint64_t window) const {
    return window * window_samples_;
  }
  uint64_t WindowEnd(uint64_t window) const {
    return window + 1 == windows_ ? total_ : WindowBegin(window + 1);
  }
  // The window holding position p; requires p < total().
  uint64_t WindowOf(uint64_t position) const {
    return position / window_samples_;
  }

  // Fills costs[i] with the cost of the sample at position first + i (a
  // position may be >= the order size in a padded last window).
  using CostsOf =
      std::function<void(uint64_t first, absl::Span<uint32_t> costs)>;

  // Window `window` arranged, its costs from `costs_of` (asked once, for
  // the whole window).
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
  uint64_t windows_;
  uint64_t total_;
};

}  // namespace shard::plan

#endif  // COMMON_PLAN_EPOCH_BATCHES_H_
