// The epoch-order positions a world of a balanced-batch epoch has to serve,
// in increasing order: an explicit head (the samples an earlier world left
// in the window it stopped in, and what followed them there), then the
// contiguous range [range_begin, range_end). A range end past the order's
// size holds padding (positions that read the order's start again). The
// whole epoch is the range [0, order size) with no head.
// Pure value type; copies share the head (immutable).
#ifndef COMMON_PLAN_BATCHES_EPOCH_REST_H_
#define COMMON_PLAN_BATCHES_EPOCH_REST_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"

namespace shard::plan {

class EpochRest {
 public:
  // The whole epoch: positions 0 .. order_size - 1.
  static EpochRest Whole(uint64_t order_size);
  // Requires head increasing, every head position < range_begin <=
  // range_end.
  EpochRest(std::vector<uint64_t> head, uint64_t range_begin,
            uint64_t range_end);

  uint64_t size() const { return head_->size() + range_end_ - range_begin_; }
  // The i-th position; requires i < size().
  uint64_t At(uint64_t i) const {
    return i < head_->size() ? (*head_)[i] : range_begin_ + i - head_->size();
  }
  // Fills out[k] with At(first + k); requires first + out.size() <= size().
  void Positions(uint64_t first, absl::Span<uint64_t> out) const;

  // The first `size` positions, or these and `size` - size() padding
  // positions after them: from the range's end on, past every position
  // the epoch's worlds have padded with so far.
  EpochRest Resized(uint64_t size) const;
  // `left` (sorted here) followed by the positions from the i-th on: what
  // a world leaves when it stops in a window that ends at i, `left` being
  // the positions of that window it did not serve.
  EpochRest Replaced(uint64_t i, std::vector<uint64_t> left) const;

 private:
  std::shared_ptr<const std::vector<uint64_t>> head_;
  uint64_t range_begin_;
  uint64_t range_end_;
};

}  // namespace shard::plan

#endif  // COMMON_PLAN_BATCHES_EPOCH_REST_H_
