#include "server/core/write_path.h"

namespace shard::server {

absl::Status WritePath::CheckServing() const {
  if (draining_) {
    return absl::UnavailableError(
        "coordinator is draining; retry against its replacement");
  }
  return log_->broken();
}

absl::Status WritePath::Persist(const shard::state::v1::StateUpdate& update) {
  if (absl::Status s = state_.Apply(update); !s.ok()) return s;
  if (absl::Status s = log_->Enqueue(update).status(); !s.ok()) return s;
  log_->MaybeSnapshot(state_);
  return absl::OkStatus();
}

}  // namespace shard::server
