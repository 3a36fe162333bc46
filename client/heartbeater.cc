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

bool Heartbeater::Ends(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kUnauthenticated:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kUnimplemented:
      return true;
    default:
      return false;
  }
}

void Heartbeater::Loop() {
  while (true) {
    absl::Status beat = client_->Heartbeat(membership_);
    absl::MutexLock lock(&mu_);
    if (absl::IsAborted(beat) || Ends(beat)) status_ = beat;
    if (Ends(beat)) return;
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_;
    };
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping), interval_)) return;
  }
}

}  // namespace shard::client
