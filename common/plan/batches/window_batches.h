// Balanced micro-batches of one window of an epoch's order: the samples are
// grouped by cost into micro-batches, the micro-batches are dealt W at a time
// into steps (one per rank) so that a step's micro-batches cost nearly the
// same, and the window's steps are put in a keyed pseudo-random order so
// that training never sees sorted lengths. docs/balanced-batches.md states
// the rules exactly; tests/conformance/batch_plan_reference.py re-implements
// them from that text.
#ifndef COMMON_PLAN_BATCHES_WINDOW_BATCHES_H_
#define COMMON_PLAN_BATCHES_WINDOW_BATCHES_H_

#include <cstdint>
#include <vector>

#include "common/plan/batches/batch_policy.h"

namespace shard::plan {

// A sample of the window: its position in the epoch and its cost.
struct WindowEntry {
  uint64_t position;
  uint32_t cost;
};

// What a window's micro-batches cost: each one's cost the steps are
// balanced by (the policy's model, or the time cost with attention_length;
// one per micro-batch, in WindowBatches::positions() order), the sums over
// the window of the samples' costs and of count x longest of each
// micro-batch, and batch_tokens x the micro-batches (0 with batch_size).
struct WindowCosts {
  std::vector<uint64_t> of_batches;
  uint64_t tokens = 0;
  uint64_t padded_tokens = 0;
  uint64_t capacity = 0;
};

// The window's steps in training order. Step s, rank r holds the
// micro-batch positions()[BatchBegin(s, r), BatchEnd(s, r)) of the window's
// entries in that micro-batch's order.
class WindowBatches {
 public:
  WindowBatches(uint32_t world_size, std::vector<uint64_t> positions,
                std::vector<uint64_t> batch_ends, WindowCosts costs);

  uint32_t world_size() const { return world_size_; }
  uint64_t steps() const { return batch_ends_.size() / world_size_; }
  uint64_t samples() const { return positions_.size(); }
  // Positions of every micro-batch, step by step, rank by rank.
  const std::vector<uint64_t>& positions() const { return positions_; }
  // Index into positions() of the first sample of step s's micro-batch for
  // rank r (s <= steps(); s == steps() with r == 0 gives samples()).
  uint64_t BatchBegin(uint64_t step, uint32_t rank) const;
  uint64_t BatchEnd(uint64_t step, uint32_t rank) const {
    return batch_ends_[step * world_size_ + rank];
  }
  // Samples of the window in steps before `step`: the window-relative
  // position where that step begins.
  uint64_t StepBegin(uint64_t step) const { return BatchBegin(step, 0); }
  // Micro-batch (step, rank)'s cost.
  uint64_t BatchCost(uint64_t step, uint32_t rank) const {
    return costs_.of_batches[step * world_size_ + rank];
  }
  const WindowCosts& costs() const { return costs_; }
  // The bytes the arrangement holds.
  uint64_t MemoryBytes() const {
    return sizeof(*this) +
           (positions_.size() + batch_ends_.size() + costs_.of_batches.size()) *
               sizeof(uint64_t);
  }

 private:
  uint32_t world_size_;
  std::vector<uint64_t> positions_;
  // End (exclusive) in positions_ of each micro-batch, in positions_ order.
  std::vector<uint64_t> batch_ends_;
  WindowCosts costs_;
};

// Arranges `entries` (in increasing position) for `world_size` ranks under
// `policy`.
// `step_key` keys the order of the steps (see StepOrderKey). Requires
// entries.size() a multiple of world_size >= 1 (EpochBatches' windows
// are): every rank gets at least one sample in every step, and with a
// token budget no micro-batch costs more than it but a single sample that
// does. Pure; O(S log S) for S entries.
WindowBatches ArrangeWindow(std::vector<WindowEntry> entries,
                            uint32_t world_size, const BatchPolicy& policy,
                            uint64_t step_key);

// The key of window `window` (0-based, counted across the epoch) of `epoch`
// for a job seeded `seed`.
uint64_t StepOrderKey(uint64_t seed, uint64_t epoch, uint64_t window);

}  // namespace shard::plan

#endif  // COMMON_PLAN_BATCHES_WINDOW_BATCHES_H_
