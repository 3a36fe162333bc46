#include "server/waiting_calls.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace shard::server {

const char* WaitingCalls::KindName(Kind kind) {
  switch (kind) {
    case Kind::kJoin:
      return "JoinJob";
    case Kind::kStoreGet:
      return "StoreGet";
    case Kind::kStoreWait:
      return "StoreWait";
  }
  return "unknown";
}

WaitingCalls::Slot::Slot(Slot&& other) noexcept
    : calls_(other.calls_), kind_(other.kind_) {
  other.calls_ = nullptr;
}

WaitingCalls::Slot::~Slot() {
  if (calls_ != nullptr) calls_->Leave(kind_);
}

absl::StatusOr<WaitingCalls::Slot> WaitingCalls::Enter(Kind kind) {
  absl::MutexLock lock(&mu_);
  if (total_ >= limit_) {
    return absl::ResourceExhaustedError(
        absl::StrCat(limit_,
                     " calls are already waiting on this coordinator (shardd "
                     "--max-waiting-calls); retry later"));
  }
  ++total_;
  ++by_kind_[static_cast<size_t>(kind)];
  return Slot(this, kind);
}

size_t WaitingCalls::waiting(Kind kind) const {
  absl::MutexLock lock(&mu_);
  return by_kind_[static_cast<size_t>(kind)];
}

void WaitingCalls::Leave(Kind kind) {
  absl::MutexLock lock(&mu_);
  --total_;
  --by_kind_[static_cast<size_t>(kind)];
}

absl::Time WaitDeadline(uint32_t wait_ms, absl::Duration max_wait,
                        absl::Time call_deadline) {
  return std::min(absl::Now() + std::min(absl::Milliseconds(wait_ms), max_wait),
                  call_deadline);
}

}  // namespace shard::server
