#include "shard/client/heartbeater.h"

#include <utility>

namespace shard::client {

Heartbeater::Heartbeater(std::shared_ptr<CoordinatorClient> client,
                         Membership membership, absl::Duration interval)
    : client_(std::move(client)),
      membership_(std::move(membership)),
      interval_(interval),
      thread_([this] { Loop(); }) {}

Heartbeater::~Heartbeater() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

absl::Status Heartbeater::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

void Heartbeater::Loop() {
  while (true) {
    absl::Status beat = client_->Heartbeat(membership_);
    absl::MutexLock lock(&mu_);
    if (absl::IsAborted(beat) || absl::IsFailedPrecondition(beat) ||
        absl::IsNotFound(beat)) {
      status_ = beat;
      return;
    }
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_;
    };
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping), interval_)) return;
  }
}

}  // namespace shard::client
