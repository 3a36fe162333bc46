// A CoordinatorService with the calls of all its services in one place and
// blocking forms of the asynchronous ones, for tests: each starts the call
// and waits for its reply (a mutation's once its journal records are
// durable). Thread-safe like the service.
#ifndef TESTS_SUPPORT_BLOCKING_COORDINATOR_H_
#define TESTS_SUPPORT_BLOCKING_COORDINATOR_H_

#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "server/plans/shard_cursor.h"
#include "server/services/coordinator_service.h"
#include "shard/v1/shard.pb.h"
#include "tests/support/await_reply.h"

namespace shard::testing {

class BlockingCoordinator : public server::CoordinatorService {
 public:
  using CoordinatorService::CoordinatorService;

  absl::StatusOr<shard::v1::Job> CreateJob(
      const shard::v1::CreateJobRequest& request) {
    return AwaitReply<shard::v1::Job>(
        [&](auto reply) { jobs().StartCreateJob(request, std::move(reply)); });
  }
  absl::StatusOr<shard::v1::DeleteJobResponse> DeleteJob(
      const shard::v1::DeleteJobRequest& request) {
    return AwaitReply<shard::v1::DeleteJobResponse>(
        [&](auto reply) { jobs().StartDeleteJob(request, std::move(reply)); });
  }
  absl::StatusOr<shard::v1::JoinJobResponse> JoinJob(
      const shard::v1::JoinJobRequest& request, absl::Time call_deadline) {
    return AwaitReply<shard::v1::JoinJobResponse>([&](auto reply) {
      membership().StartJoinJob(request, call_deadline, std::move(reply));
    });
  }
  absl::StatusOr<shard::v1::LeaveResponse> Leave(
      const shard::v1::LeaveRequest& request) {
    return AwaitReply<shard::v1::LeaveResponse>([&](auto reply) {
      membership().StartLeave(request, std::move(reply));
    });
  }
  absl::StatusOr<shard::v1::CommitProgressResponse> CommitProgress(
      const shard::v1::CommitProgressRequest& request) {
    return AwaitReply<shard::v1::CommitProgressResponse>([&](auto reply) {
      progress().StartCommitProgress(request, std::move(reply));
    });
  }
  absl::StatusOr<server::ShardCursor> OpenShard(
      const shard::v1::StreamShardRequest& request) {
    return AwaitReply<server::ShardCursor>([&](auto reply) {
      shards().StartOpenShard(request, std::move(reply));
    });
  }
  absl::StatusOr<shard::v1::PreviewShardResponse> PreviewShard(
      const shard::v1::PreviewShardRequest& request, absl::Time call_deadline) {
    return AwaitReply<shard::v1::PreviewShardResponse>([&](auto reply) {
      shards().StartPreviewShard(request, call_deadline, std::move(reply));
    });
  }
  absl::StatusOr<shard::v1::Job> GetJob(
      const shard::v1::GetJobRequest& request) {
    return jobs().GetJob(request);
  }
  absl::StatusOr<shard::v1::ListJobsResponse> ListJobs(
      const shard::v1::ListJobsRequest& request) {
    return jobs().ListJobs(request);
  }
  absl::StatusOr<shard::v1::HeartbeatResponse> Heartbeat(
      const shard::v1::HeartbeatRequest& request) {
    return membership().Heartbeat(request);
  }
  void ExpireLeases(absl::Duration stalled = absl::ZeroDuration()) {
    membership().ExpireLeases(stalled);
  }
  absl::StatusOr<shard::v1::StoreGetResponse> StoreGet(
      const shard::v1::StoreGetRequest& request, absl::Time call_deadline) {
    return AwaitReply<shard::v1::StoreGetResponse>([&](auto reply) {
      store().StartStoreGet(request, call_deadline, std::move(reply));
    });
  }
  absl::StatusOr<shard::v1::StoreWaitResponse> StoreWait(
      const shard::v1::StoreWaitRequest& request, absl::Time call_deadline) {
    return AwaitReply<shard::v1::StoreWaitResponse>([&](auto reply) {
      store().StartStoreWait(request, call_deadline, std::move(reply));
    });
  }
};

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_BLOCKING_COORDINATOR_H_
