#include "common/plan/order_progress.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"

namespace shard::plan {

void OrderProgress::Advance(uint64_t final) {
  final_.store(final, std::memory_order_release);
  std::vector<Callback> ready;
  {
    absl::MutexLock lock(&mu_);
    const auto end = waiting_.lower_bound(final);
    for (auto it = waiting_.begin(); it != end; ++it) {
      ready.push_back(std::move(it->second));
    }
    waiting_.erase(waiting_.begin(), end);
  }
  for (Callback& done : ready) std::move(done)(absl::OkStatus());
}

void OrderProgress::Abandon(absl::Status error) {
  std::multimap<uint64_t, Callback> waiting;
  {
    absl::MutexLock lock(&mu_);
    abandoned_ = error;
    waiting.swap(waiting_);
  }
  for (auto& [entry, done] : waiting) std::move(done)(error);
}

void OrderProgress::WhenFinal(uint64_t entry, Callback done) {
  absl::Status outcome;
  {
    absl::MutexLock lock(&mu_);
    // Read under the lock: an Advance past `entry` either came before (seen
    // here) or takes the lock after the callback is registered.
    if (entry >= Final() && abandoned_.ok()) {
      waiting_.emplace(entry, std::move(done));
      return;
    }
    outcome = entry < Final() ? absl::OkStatus() : abandoned_;
  }
  std::move(done)(outcome);
}

absl::Status OrderProgress::AwaitFinal(uint64_t entry, absl::Time deadline) {
  if (entry < Final()) return absl::OkStatus();
  // Shared with the callback, which may run after a timed-out wait returned.
  struct Outcome {
    absl::Notification done;
    absl::Status status;
  };
  auto outcome = std::make_shared<Outcome>();
  WhenFinal(entry, [outcome](absl::Status status) {
    outcome->status = std::move(status);
    outcome->done.Notify();
  });
  if (!outcome->done.WaitForNotificationWithDeadline(deadline)) {
    return absl::DeadlineExceededError(
        "the epoch order was still being computed at the call's deadline");
  }
  return outcome->status;
}

}  // namespace shard::plan
