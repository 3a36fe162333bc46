#include "server/balance_tally.h"

namespace shard::server {

void BalanceTally::Add(uint64_t epoch, uint64_t world_base, uint64_t window,
                       const plan::WindowBatches& batches) {
  absl::MutexLock lock(&mu_);
  if (epoch_.has_value() && epoch < *epoch_) return;
  if (!epoch_.has_value() || epoch > *epoch_) {
    epoch_ = epoch;
    counted_.clear();
    figures_ = plan::BalanceFigures();
  }
  if (counted_.emplace(world_base, window).second) figures_.AddWindow(batches);
}

std::optional<shard::v1::BatchBalance> BalanceTally::Figures() const {
  absl::MutexLock lock(&mu_);
  if (!epoch_.has_value()) return std::nullopt;
  return plan::BalanceProto(figures_, *epoch_);
}

}  // namespace shard::server
