#include "server/plans/shared_window_table.h"

#include <algorithm>
#include <utility>

namespace shard::server {

SharedWindowTable::Key SharedWindowTable::KeyOf(
    uint64_t incarnation, uint64_t epoch, const plan::EpochWorlds& worlds) {
  std::vector<uint64_t> chain;
  for (const plan::EpochLink& link : worlds.links()) {
    chain.push_back(link.base);
    chain.push_back(link.world_size);
  }
  return Key(incarnation, epoch, std::move(chain));
}

std::shared_ptr<SharedWindows> SharedWindowTable::For(
    uint64_t incarnation, uint64_t epoch, const plan::EpochWorlds& worlds,
    std::shared_ptr<BalanceTally> balance) {
  const Key key = KeyOf(incarnation, epoch, worlds);
  if (balance != nullptr) balance->BeginWorld(epoch, worlds.last().base);
  absl::MutexLock lock(&mu_);
  std::shared_ptr<SharedWindows> windows =
      FindOrMakeLocked(key, epoch, worlds, std::move(balance));
  // The streams hold it from now on.
  pinned_.erase(
      std::remove_if(pinned_.begin(), pinned_.end(),
                     [&key](const auto& pin) { return pin.first == key; }),
      pinned_.end());
  return windows;
}

std::shared_ptr<SharedWindows> SharedWindowTable::Pin(
    uint64_t incarnation, uint64_t epoch, const plan::EpochWorlds& worlds,
    std::shared_ptr<BalanceTally> balance) {
  Key key = KeyOf(incarnation, epoch, worlds);
  absl::MutexLock lock(&mu_);
  std::shared_ptr<SharedWindows> windows =
      FindOrMakeLocked(key, epoch, worlds, std::move(balance));
  if (pinned_.size() >= kMaxPinned) pinned_.erase(pinned_.begin());
  pinned_.emplace_back(std::move(key), windows);
  return windows;
}

std::shared_ptr<SharedWindows> SharedWindowTable::FindOrMakeLocked(
    const Key& key, uint64_t epoch, const plan::EpochWorlds& worlds,
    std::shared_ptr<BalanceTally> balance) {
  std::weak_ptr<SharedWindows>& entry = worlds_[key];
  if (std::shared_ptr<SharedWindows> held = entry.lock()) return held;
  SharedWindows::OnFirstTaken on_first_taken;
  if (balance != nullptr) {
    on_first_taken = [balance = std::move(balance), epoch,
                      base = worlds.last().base](
                         uint64_t window, const plan::WindowBatches& batches) {
      balance->Add(epoch, base, window, batches);
    };
  }
  auto made = std::make_shared<SharedWindows>(worlds.last().world_size,
                                              kMaxBytesPerWorld, arranged_,
                                              std::move(on_first_taken));
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

size_t SharedWindowTable::pinned() const {
  absl::MutexLock lock(&mu_);
  return pinned_.size();
}

}  // namespace shard::server
