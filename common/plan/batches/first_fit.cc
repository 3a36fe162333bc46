#include "common/plan/batches/first_fit.h"

#include <algorithm>

namespace shard::plan {

FirstFit::FirstFit(uint64_t capacity, uint64_t budget) : leaves_(1) {
  while (leaves_ < capacity) leaves_ *= 2;
  // Leaves past `capacity` have no room; the others the budget.
  room_.assign(2 * leaves_, -1);
  std::fill_n(room_.begin() + leaves_, capacity, static_cast<int64_t>(budget));
  for (uint64_t node = leaves_; node-- > 1;) {
    room_[node] = std::max(room_[2 * node], room_[2 * node + 1]);
  }
}

std::optional<uint64_t> FirstFit::FirstWithRoom(uint64_t cost) const {
  const int64_t wanted = static_cast<int64_t>(cost);
  if (room_[1] < wanted) return std::nullopt;
  uint64_t node = 1;
  while (node < leaves_) {
    node = room_[2 * node] >= wanted ? 2 * node : 2 * node + 1;
  }
  return node - leaves_;
}

void FirstFit::Take(uint64_t batch, uint64_t cost) {
  uint64_t node = leaves_ + batch;
  const int64_t wanted = static_cast<int64_t>(cost);
  room_[node] = room_[node] >= wanted ? room_[node] - wanted : -1;
  for (node /= 2; node >= 1; node /= 2) {
    room_[node] = std::max(room_[2 * node], room_[2 * node + 1]);
  }
}

}  // namespace shard::plan
