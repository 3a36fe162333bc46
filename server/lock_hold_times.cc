#include "server/lock_hold_times.h"

#include <algorithm>

namespace shard::server {

const std::array<double, LockHoldTimes::kBounds>&
LockHoldTimes::BoundsSeconds() {
  static const std::array<double, kBounds> bounds = [] {
    std::array<double, kBounds> b{};
    double decade = 1e-6;
    for (size_t i = 0; i < kBounds; i += 3, decade *= 10) {
      b[i] = decade;
      if (i + 1 < kBounds) b[i + 1] = 2 * decade;
      if (i + 2 < kBounds) b[i + 2] = 5 * decade;
    }
    return b;
  }();
  return bounds;
}

void LockHoldTimes::Record(absl::Duration held) {
  const double seconds = absl::ToDoubleSeconds(held);
  const std::array<double, kBounds>& bounds = BoundsSeconds();
  const size_t bucket =
      std::lower_bound(bounds.begin(), bounds.end(), seconds) - bounds.begin();
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  const int64_t ns = absl::ToInt64Nanoseconds(held);
  sum_ns_.fetch_add(ns, std::memory_order_relaxed);
  int64_t max = max_ns_.load(std::memory_order_relaxed);
  while (ns > max &&
         !max_ns_.compare_exchange_weak(max, ns, std::memory_order_relaxed)) {
  }
}

LockHoldTimes::Summary LockHoldTimes::Read() const {
  Summary summary;
  for (size_t i = 0; i < counts_.size(); ++i) {
    summary.counts[i] = counts_[i].load(std::memory_order_relaxed);
    summary.count += summary.counts[i];
  }
  summary.sum_seconds = sum_ns_.load(std::memory_order_relaxed) * 1e-9;
  summary.max_seconds = max_ns_.load(std::memory_order_relaxed) * 1e-9;
  return summary;
}

}  // namespace shard::server
