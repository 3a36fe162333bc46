#include "server/plans/balance_tally.h"

namespace shard::server {

bool BalanceTally::CountsWorld(uint64_t epoch, uint64_t world_base) {
  const std::pair<uint64_t, uint64_t> world(epoch, world_base);
  if (world_.has_value() && world < *world_) return false;
  if (!world_.has_value() || world > *world_) {
    world_ = world;
    counted_.clear();
    figures_ = plan::BalanceFigures();
  }
  return true;
}

void BalanceTally::BeginWorld(uint64_t epoch, uint64_t world_base) {
  absl::MutexLock lock(&mu_);
  CountsWorld(epoch, world_base);
}

void BalanceTally::Add(uint64_t epoch, uint64_t world_base, uint64_t window,
                       const plan::WindowBatches& batches) {
  absl::MutexLock lock(&mu_);
  if (!CountsWorld(epoch, world_base)) return;
  if (counted_.insert(window).second) figures_.AddWindow(batches);
}

std::optional<shard::v1::BatchBalance> BalanceTally::Figures() const {
  absl::MutexLock lock(&mu_);
  if (!world_.has_value() || figures_.steps() == 0) return std::nullopt;
  shard::v1::BatchBalance balance = plan::BalanceProto(figures_, world_->first);
  balance.set_from_position(world_->second);
  return balance;
}

}  // namespace shard::server
