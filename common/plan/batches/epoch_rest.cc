#include "common/plan/batches/epoch_rest.h"

#include <algorithm>
#include <utility>

namespace shard::plan {

EpochRest EpochRest::Whole(uint64_t order_size) {
  return EpochRest({}, 0, order_size);
}

EpochRest::EpochRest(std::vector<uint64_t> head, uint64_t range_begin,
                     uint64_t range_end)
    : head_(std::make_shared<const std::vector<uint64_t>>(std::move(head))),
      range_begin_(range_begin),
      range_end_(range_end) {}

void EpochRest::Positions(uint64_t first, absl::Span<uint64_t> out) const {
  for (uint64_t k = 0; k < out.size(); ++k) out[k] = At(first + k);
}

EpochRest EpochRest::Resized(uint64_t size) const {
  if (size >= this->size()) {
    EpochRest padded = *this;
    padded.range_end_ += size - this->size();
    return padded;
  }
  if (size >= head_->size()) {
    EpochRest cut = *this;
    cut.range_end_ = range_begin_ + size - head_->size();
    return cut;
  }
  // Nothing of the range is left: it stays empty at its end, where the
  // next padding would go.
  return EpochRest(std::vector<uint64_t>(head_->begin(), head_->begin() + size),
                   range_end_, range_end_);
}

EpochRest EpochRest::Replaced(uint64_t i, std::vector<uint64_t> left) const {
  std::sort(left.begin(), left.end());
  if (i >= head_->size()) {
    return EpochRest(std::move(left), range_begin_ + i - head_->size(),
                     range_end_);
  }
  left.insert(left.end(), head_->begin() + i, head_->end());
  return EpochRest(std::move(left), range_begin_, range_end_);
}

}  // namespace shard::plan
