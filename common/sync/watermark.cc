#include "common/sync/watermark.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"

namespace shard::sync {

void Watermark::Advance(uint64_t to) {
  std::vector<Callback> ready;
  {
    absl::MutexLock lock(&mu_);
    if (to <= reached_.load(std::memory_order_relaxed)) return;
    reached_.store(to, std::memory_order_release);
    const auto end = waiting_.upper_bound(to);
    for (auto it = waiting_.begin(); it != end; ++it) {
      ready.push_back(std::move(it->second));
    }
    waiting_.erase(waiting_.begin(), end);
  }
  for (Callback& done : ready) std::move(done)(absl::OkStatus());
}

void Watermark::Break(absl::Status error) {
  std::multimap<uint64_t, Callback> waiting;
  {
    absl::MutexLock lock(&mu_);
    if (broken_.ok()) broken_ = std::move(error);
    error = broken_;
    waiting.swap(waiting_);
  }
  for (auto& [value, done] : waiting) std::move(done)(error);
}

void Watermark::WhenReached(uint64_t value, Callback done) {
  absl::Status outcome;
  {
    absl::MutexLock lock(&mu_);
    // Read under the lock: an Advance to `value` either came before (seen
    // here) or takes the lock after the callback is registered.
    const bool reached = value <= reached_.load(std::memory_order_relaxed);
    if (!reached && broken_.ok()) {
      waiting_.emplace(value, std::move(done));
      return;
    }
    outcome = reached ? absl::OkStatus() : broken_;
  }
  std::move(done)(std::move(outcome));
}

absl::Status Watermark::AwaitReached(uint64_t value, absl::Time deadline) {
  if (value <= reached()) return absl::OkStatus();
  // Shared with the callback, which may run after a timed-out wait returned.
  struct Outcome {
    absl::Notification done;
    absl::Status status;
  };
  auto outcome = std::make_shared<Outcome>();
  WhenReached(value, [outcome](absl::Status status) {
    outcome->status = std::move(status);
    outcome->done.Notify();
  });
  if (!outcome->done.WaitForNotificationWithDeadline(deadline)) {
    return absl::DeadlineExceededError("the awaited value was not reached");
  }
  return outcome->status;
}

}  // namespace shard::sync
