#include "server/waiting/reply.h"

namespace shard::server {

bool Cancellation::OnCancel(absl::AnyInvocable<void() &&> on_cancel) {
  absl::MutexLock lock(&mu_);
  if (cancelled_) return false;
  on_cancel_ = std::move(on_cancel);
  return true;
}

void Cancellation::Cancel() {
  absl::AnyInvocable<void() &&> on_cancel;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return;
    cancelled_ = true;
    on_cancel.swap(on_cancel_);
  }
  if (on_cancel) std::move(on_cancel)();
}

}  // namespace shard::server
