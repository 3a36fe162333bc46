#include "tests/support/async_joins.h"

#include "absl/strings/str_cat.h"

namespace shard::testing {
namespace {

std::vector<shard::v1::JoinJobRequest> JoinRequests(
    const std::string& job, const std::string& member_prefix, int count,
    uint32_t wait_ms) {
  std::vector<shard::v1::JoinJobRequest> requests(count);
  for (int i = 0; i < count; ++i) {
    requests[i].set_job_id(job);
    requests[i].set_member_id(absl::StrCat(member_prefix, i));
    requests[i].set_wait_for_world_ms(wait_ms);
  }
  return requests;
}

}  // namespace

AsyncJoins::AsyncJoins(const std::vector<shard::v1::Coordinator::Stub*>& stubs,
                       const std::string& job, const std::string& member_prefix,
                       int count, uint32_t wait_ms)
    : AsyncCalls(JoinRequests(job, member_prefix, count, wait_ms),
                 [&stubs](int i, grpc::ClientContext* context,
                          const shard::v1::JoinJobRequest& request,
                          grpc::CompletionQueue* queue) {
                   return stubs[i % stubs.size()]->PrepareAsyncJoinJob(
                       context, request, queue);
                 }) {}

}  // namespace shard::testing
