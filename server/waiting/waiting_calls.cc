#include "server/waiting/waiting_calls.h"

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
    : calls_(other.calls_),
      kind_(other.kind_),
      tenant_(std::move(other.tenant_)) {
  other.calls_ = nullptr;
}

WaitingCalls::Slot::~Slot() {
  if (calls_ != nullptr) calls_->Leave(kind_, tenant_);
}

size_t WaitingCalls::limit() const {
  return base_ + kPerRank * ranks_held_.load(std::memory_order_relaxed);
}

absl::StatusOr<WaitingCalls::Slot> WaitingCalls::Enter(
    Kind kind, absl::string_view job_id, uint64_t incoming_ranks) {
  const std::shared_ptr<const TenantLimits> tenant =
      tenant_of_ ? tenant_of_(job_id) : nullptr;
  absl::MutexLock lock(&mu_);
  const uint64_t ranks =
      ranks_held_.load(std::memory_order_relaxed) + incoming_ranks;
  if (const size_t limit = base_ + kPerRank * ranks; total_ >= limit) {
    return absl::ResourceExhaustedError(
        absl::StrCat(total_,
                     " calls are already waiting on this coordinator, its "
                     "limit is ",
                     limit, " (shardd --max-waiting-calls ", base_, " plus ",
                     kPerRank, " per rank of its ", ranks,
                     " ranks); retry later, or raise --max-waiting-calls"));
  }
  std::string counted;
  if (tenant != nullptr && tenant->max_waiting_calls) {
    const auto waiting = by_tenant_.find(tenant->tenant);
    if (absl::Status s = CheckTenantQuota(
            tenant.get(), &TenantLimits::max_waiting_calls, "waiting_calls",
            waiting == by_tenant_.end() ? 0 : waiting->second, 1);
        !s.ok()) {
      return s;
    }
    counted = tenant->tenant;
    ++by_tenant_[counted];
  }
  ++total_;
  ++by_kind_[static_cast<size_t>(kind)];
  return Slot(this, kind, std::move(counted));
}

size_t WaitingCalls::waiting_of(absl::string_view tenant) const {
  absl::MutexLock lock(&mu_);
  const auto waiting = by_tenant_.find(tenant);
  return waiting == by_tenant_.end() ? 0 : waiting->second;
}

size_t WaitingCalls::waiting(Kind kind) const {
  absl::MutexLock lock(&mu_);
  return by_kind_[static_cast<size_t>(kind)];
}

void WaitingCalls::Leave(Kind kind, const std::string& tenant) {
  absl::MutexLock lock(&mu_);
  --total_;
  --by_kind_[static_cast<size_t>(kind)];
  if (tenant.empty()) return;
  const auto waiting = by_tenant_.find(tenant);
  if (--waiting->second == 0) by_tenant_.erase(waiting);
}

absl::Time WaitDeadline(uint32_t wait_ms, absl::Duration max_wait,
                        absl::Time call_deadline) {
  return std::min(absl::Now() + std::min(absl::Milliseconds(wait_ms), max_wait),
                  call_deadline);
}

}  // namespace shard::server
