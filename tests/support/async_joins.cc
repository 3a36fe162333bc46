#include "tests/support/async_joins.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace shard::testing {

AsyncJoins::AsyncJoins(const std::vector<shard::v1::Coordinator::Stub*>& stubs,
                       const std::string& job, const std::string& member_prefix,
                       int count, uint32_t wait_ms)
    : calls_(count) {
  for (int i = 0; i < count; ++i) {
    Call& call = calls_[i];
    call.request.set_job_id(job);
    call.request.set_member_id(absl::StrCat(member_prefix, i));
    call.request.set_wait_for_world_ms(wait_ms);
    stubs[i % stubs.size()]->async()->JoinJob(
        &call.context, &call.request, &call.response,
        [this, &call](grpc::Status status) {
          absl::MutexLock lock(&mu_);
          if (status.ok()) ++ok_;
          call.status = std::move(status);
          if (++finished_ == calls_.size()) all_done_.SignalAll();
        });
  }
}

AsyncJoins::~AsyncJoins() {
  CancelAll();
  AwaitDone();
}

void AsyncJoins::CancelAll() {
  for (Call& call : calls_) call.context.TryCancel();
}

void AsyncJoins::AwaitDone() {
  absl::MutexLock lock(&mu_);
  while (finished_ < calls_.size()) all_done_.Wait(&mu_);
}

size_t AsyncJoins::finished() {
  absl::MutexLock lock(&mu_);
  return finished_;
}

size_t AsyncJoins::ok() {
  absl::MutexLock lock(&mu_);
  return ok_;
}

grpc::Status AsyncJoins::status(int i) {
  absl::MutexLock lock(&mu_);
  return calls_[i].status;
}

}  // namespace shard::testing
