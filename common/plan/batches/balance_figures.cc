#include "common/plan/batches/balance_figures.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace shard::plan {

BalanceFigures::BalanceFigures() : histogram_(kBuckets + 1, 0) {}

size_t BalanceFigures::BucketOf(uint64_t most, unsigned __int128 total,
                                uint32_t world) {
  if (total == 0) return 0;
  // x - 1 = (W x most - total) / total, exactly: W x most < 2^84.
  const unsigned __int128 excess =
      static_cast<unsigned __int128>(most) * world - total;
  if (excess >= total) return kBuckets;  // x >= 2
  return static_cast<size_t>(excess * kBuckets / total);
}

void BalanceFigures::AddWindow(const WindowBatches& window) {
  const uint32_t world = window.world_size();
  for (uint64_t step = 0; step < window.steps(); ++step) {
    unsigned __int128 total = 0;  // W costs of up to 2^64 - 1 each
    uint64_t most = 0;
    for (uint32_t rank = 0; rank < world; ++rank) {
      const uint64_t cost = window.BatchCost(step, rank);
      total += cost;
      most = std::max(most, cost);
    }
    ++histogram_[BucketOf(most, total, world)];
    const double imbalance = total == 0 ? 1.0
                                        : static_cast<double>(most) * world /
                                              static_cast<double>(total);
    max_ = std::max(max_, imbalance);
    ++steps_;
  }
  samples_ += window.samples();
  tokens_ += static_cast<double>(window.costs().tokens);
  padded_tokens_ += static_cast<double>(window.costs().padded_tokens);
  capacity_ += static_cast<double>(window.costs().capacity);
}

double BalanceFigures::Imbalance(double q) const {
  if (steps_ == 0) return 0;
  const uint64_t rank = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(steps_))));
  uint64_t seen = 0;
  for (int bucket = 0; bucket < kBuckets; ++bucket) {
    seen += histogram_[bucket];
    if (seen >= rank) {
      return std::min(max_,
                      static_cast<double>(kBuckets + bucket + 1) / kBuckets);
    }
  }
  return max_;
}

double BalanceFigures::fill() const {
  return capacity_ == 0 ? 0 : tokens_ / capacity_;
}

double BalanceFigures::padding() const {
  return padded_tokens_ == 0 ? 0 : (padded_tokens_ - tokens_) / padded_tokens_;
}

shard::v1::BatchBalance BalanceProto(const BalanceFigures& figures,
                                     uint64_t epoch) {
  shard::v1::BatchBalance balance;
  balance.set_epoch(epoch);
  balance.set_steps(figures.steps());
  balance.set_samples(figures.samples());
  balance.set_imbalance_p50(figures.Imbalance(0.5));
  balance.set_imbalance_p99(figures.Imbalance(0.99));
  balance.set_imbalance_max(figures.max_imbalance());
  balance.set_padding(figures.padding());
  balance.set_fill(figures.fill());
  return balance;
}

}  // namespace shard::plan
