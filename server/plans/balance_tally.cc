#include "server/plans/balance_tally.h"

namespace shard::server {

void BalanceTally::Add(uint64_t epoch, uint64_t world_base, uint64_t window,
                       const plan::WindowBatches& batches) {
  absl::MutexLock lock(&mu_);
  const std::pair<uint64_t, uint64_t> world(epoch, world_base);
  if (world_.has_value() && world < *world_) return;
  if (!world_.has_value() || world > *world_) {
    world_ = world;
    counted_.clear();
    figures_ = plan::BalanceFigures();
  }
  if (counted_.insert(window).second) figures_.AddWindow(batches);
}

std::optional<shard::v1::BatchBalance> BalanceTally::Figures() const {
  absl::MutexLock lock(&mu_);
  if (!world_.has_value()) return std::nullopt;
  shard::v1::BatchBalance balance = plan::BalanceProto(figures_, world_->first);
  balance.set_from_position(world_->second);
  return balance;
}

}  // namespace shard::server
