#include "shard/client/heartbeater.h"

#include <algorithm>
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
  absl::Duration asked = absl::ZeroDuration();
  while (true) {
    absl::Status beat = client_->Heartbeat(membership_, &asked);
    absl::MutexLock lock(&mu_);
    if (absl::IsAborted(beat) || Ends(beat)) status_ = beat;
    if (Ends(beat)) return;
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_;
    };
    // The coordinator's pace, when it asks for a longer one (kept through
    // failed heartbeats: the last pace it asked for).
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping),
                             std::max(interval_, asked))) {
      return;
    }
  }
}

}  // namespace shard::client
