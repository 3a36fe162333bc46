#include "server/shared_window_table.h"

#include <utility>

namespace shard::server {

std::shared_ptr<SharedWindows> SharedWindowTable::For(
    uint64_t incarnation, uint64_t epoch, const plan::EpochWorlds& worlds,
    std::shared_ptr<BalanceTally> balance) {
  std::vector<uint64_t> chain;
  for (const plan::EpochLink& link : worlds.links()) {
    chain.push_back(link.base);
    chain.push_back(link.world_size);
  }
  Key key(incarnation, epoch, std::move(chain));
  absl::MutexLock lock(&mu_);
  std::weak_ptr<SharedWindows>& entry = worlds_[key];
  if (std::shared_ptr<SharedWindows> held = entry.lock()) return held;
  SharedWindows::OnArranged on_arranged;
  if (balance != nullptr) {
    on_arranged = [balance = std::move(balance), epoch,
                   base = worlds.last().base](
                      uint64_t window, const plan::WindowBatches& batches) {
      balance->Add(epoch, base, window, batches);
    };
  }
  auto made = std::make_shared<SharedWindows>(worlds.last().world_size,
                                              kMaxBytesPerWorld, arranged_,
                                              std::move(on_arranged));
  entry = made;
  if (worlds_.size() >= sweep_at_) {
    absl::erase_if(worlds_, [](const auto& kv) { return kv.second.expired(); });
    sweep_at_ = 2 * worlds_.size() + 16;
  }
  return made;
}

size_t SharedWindowTable::size() const {
  absl::MutexLock lock(&mu_);
  return worlds_.size();
}

}  // namespace shard::server
