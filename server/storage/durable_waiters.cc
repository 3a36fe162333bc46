#include "server/storage/durable_waiters.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace shard::storage {

void DurableWaiters::Add(uint64_t sequence, StateStore::Durable done) {
  absl::Status decided;
  {
    absl::MutexLock lock(&mu_);
    if (durable_ < sequence && broken_.ok()) {
      pending_.emplace(sequence, std::move(done));
      return;
    }
    decided = durable_ >= sequence ? absl::OkStatus() : broken_;
  }
  std::move(done)(decided);
}

void DurableWaiters::Advance(uint64_t durable) {
  {
    absl::MutexLock lock(&mu_);
    durable_ = std::max(durable_, durable);
  }
  RunDecided();
}

void DurableWaiters::Break(const absl::Status& error) {
  {
    absl::MutexLock lock(&mu_);
    broken_ = error;
  }
  RunDecided();
}

void DurableWaiters::Close(absl::string_view closed) {
  Break(absl::UnavailableError(closed));
}

void DurableWaiters::RunDecided() {
  std::vector<std::pair<StateStore::Durable, absl::Status>> decided;
  {
    absl::MutexLock lock(&mu_);
    auto end = broken_.ok() ? pending_.upper_bound(durable_) : pending_.end();
    for (auto it = pending_.begin(); it != end; ++it) {
      decided.emplace_back(std::move(it->second),
                           it->first <= durable_ ? absl::OkStatus() : broken_);
    }
    pending_.erase(pending_.begin(), end);
  }
  for (auto& [done, status] : decided) std::move(done)(status);
}

}  // namespace shard::storage
