#include "common/plan/batches/first_fit.h"

#include <algorithm>

namespace shard::plan {

FirstFit::FirstFit(uint64_t budget, uint64_t expected)
    : budget_(static_cast<int64_t>(budget)) {
  while (leaves_ < expected) leaves_ *= 2;
  room_.assign(2 * leaves_, budget_);
}

uint64_t FirstFit::Place(uint64_t cost) {
  const int64_t wanted = static_cast<int64_t>(cost);
  uint64_t batch = FirstWithRoom(wanted);
  if (batch == started_) {
    if (started_ == leaves_) Grow();
    ++started_;
  }
  Take(batch, wanted);
  return batch;
}

uint64_t FirstFit::FirstWithRoom(int64_t wanted) const {
  // Leaves not started hold the budget, so a cost within it always finds
  // one at started_ or before (while started_ < leaves_).
  if (room_[1] < wanted) return started_;
  uint64_t node = 1;
  while (node < leaves_) {
    node = room_[2 * node] >= wanted ? 2 * node : 2 * node + 1;
  }
  return node - leaves_;
}

void FirstFit::Take(uint64_t batch, int64_t cost) {
  uint64_t node = leaves_ + batch;
  room_[node] = room_[node] >= cost ? room_[node] - cost : -1;
  // Up to the first ancestor whose largest room does not change.
  for (node /= 2; node >= 1; node /= 2) {
    const int64_t largest = std::max(room_[2 * node], room_[2 * node + 1]);
    if (room_[node] == largest) break;
    room_[node] = largest;
  }
}

void FirstFit::Grow() {
  std::vector<int64_t> grown(4 * leaves_, budget_);
  std::copy(room_.begin() + leaves_, room_.end(), grown.begin() + 2 * leaves_);
  leaves_ *= 2;
  room_.swap(grown);
  for (uint64_t node = leaves_; node-- > 1;) {
    room_[node] = std::max(room_[2 * node], room_[2 * node + 1]);
  }
}

}  // namespace shard::plan
