#include "server/rpc/serving_slot.h"

#include <utility>

namespace shard::server {

ServingSlot::ServingSlot(std::function<absl::Status()> gate)
    : gate_(std::move(gate)) {}

absl::StatusOr<ServingSlot::Claim> ServingSlot::Acquire() const {
  if (gate_) {
    if (absl::Status refused = gate_(); !refused.ok()) return refused;
  }
  absl::MutexLock lock(&mu_);
  if (service_ == nullptr) {
    return absl::UnavailableError(
        "the coordinator does not serve right now (it is draining, or a "
        "replica is taking over); retry");
  }
  return Claim{service_, term_.load()};
}

absl::Status ServingSlot::StillServes(uint64_t term) const {
  if (gate_) {
    if (absl::Status refused = gate_(); !refused.ok()) return refused;
  }
  if (term != term_.load()) {
    return absl::UnavailableError(
        "the coordinator stopped serving this stream (it is draining, or "
        "stopped leading); resume it from the first index not received");
  }
  return absl::OkStatus();
}

void ServingSlot::Install(std::shared_ptr<CoordinatorService> service) {
  absl::MutexLock lock(&mu_);
  service_ = std::move(service);
  term_.fetch_add(1);
}

std::shared_ptr<CoordinatorService> ServingSlot::TakeOut() {
  std::shared_ptr<CoordinatorService> taken;
  {
    absl::MutexLock lock(&mu_);
    taken = std::move(service_);
    term_.fetch_add(1);
  }
  if (taken != nullptr) taken->Drain();
  return taken;
}

}  // namespace shard::server
