// The coordinator's request handling, independent of gRPC.
//
// Validates each request, turns accepted mutations into state updates,
// applies them to CoordinatorState and answers with absl::Status codes as
// documented in proto/shard/v1/shard.proto. Owns the locking: every method
// is thread-safe. Join waits for the world with a deadline; Drain() makes
// every call (including waiting joins) answer UNAVAILABLE.
#ifndef SERVER_COORDINATOR_SERVICE_H_
#define SERVER_COORDINATOR_SERVICE_H_

#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/coordinator_state.h"
#include "server/epoch_order_cache.h"
#include "server/rendezvous_store.h"
#include "server/shard_cursor.h"
#include "server/storage/state_log.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

struct CoordinatorOptions {
  // Largest shuffled epoch order one job may hold in memory; CreateJob of a
  // bigger job is refused. The cache may hold two per job (current + next).
  uint64_t max_order_bytes = uint64_t{4} << 30;
  // Indices per streamed chunk when the request does not say.
  uint32_t default_chunk_indices = 16384;
  // Upper clamp for a requested chunk size.
  uint32_t max_chunk_indices = 65536;
  // Upper clamp for JoinJob's wait_for_world_ms.
  absl::Duration max_join_wait = absl::Minutes(30);
};

class CoordinatorService {
 public:
  // In-memory service (tests).
  explicit CoordinatorService(CoordinatorOptions options = {});
  // A service over recovered durable state: every accepted mutation is
  // appended to `log` (and fsynced) before it is applied and answered.
  CoordinatorService(CoordinatorOptions options, storage::OpenedLog opened);

  absl::StatusOr<shard::v1::Job> CreateJob(
      const shard::v1::CreateJobRequest& request) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<shard::v1::Job> GetJob(const shard::v1::GetJobRequest& request)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<shard::v1::ListJobsResponse> ListJobs(
      const shard::v1::ListJobsRequest& request) ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until the world formed, the wait ends, `call_deadline` passes or
  // the service drains.
  absl::StatusOr<shard::v1::JoinJobResponse> JoinJob(
      const shard::v1::JoinJobRequest& request, absl::Time call_deadline)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Validates a stream request and returns a cursor over the rank's shard.
  // May compute the epoch order (bounded by `call_deadline`).
  absl::StatusOr<ShardCursor> OpenShard(
      const shard::v1::StreamShardRequest& request, absl::Time call_deadline)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<shard::v1::PreviewShardResponse> PreviewShard(
      const shard::v1::PreviewShardRequest& request, absl::Time call_deadline)
      ABSL_LOCKS_EXCLUDED(mu_);

  absl::StatusOr<shard::v1::CommitProgressResponse> CommitProgress(
      const shard::v1::CommitProgressRequest& request) ABSL_LOCKS_EXCLUDED(mu_);

  // Rendezvous key-value space of the current generation (c10d Store).
  absl::StatusOr<shard::v1::StoreSetResponse> StoreSet(
      const shard::v1::StoreSetRequest& request) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<shard::v1::StoreGetResponse> StoreGet(
      const shard::v1::StoreGetRequest& request, absl::Time call_deadline)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<shard::v1::StoreAddResponse> StoreAdd(
      const shard::v1::StoreAddRequest& request) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<shard::v1::StoreCompareSetResponse> StoreCompareSet(
      const shard::v1::StoreCompareSetRequest& request)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<shard::v1::StoreWaitResponse> StoreWait(
      const shard::v1::StoreWaitRequest& request, absl::Time call_deadline)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<shard::v1::StoreDeleteResponse> StoreDelete(
      const shard::v1::StoreDeleteRequest& request) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<shard::v1::StoreCountResponse> StoreCount(
      const shard::v1::StoreCountRequest& request) ABSL_LOCKS_EXCLUDED(mu_);

  // From now on every call answers UNAVAILABLE; waiting joins wake up.
  void Drain() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Status CheckServing() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Journals the update, then applies it. On error nothing is applied.
  absl::Status Persist(const shard::state::v1::StateUpdate& update)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Creates the job or checks that the stored spec equals `spec`.
  // `conflict_code` is the error for a different stored spec.
  absl::StatusOr<const JobState*> CreateOrMatchJob(
      const std::string& job_id, const shard::v1::JobSpec& spec,
      absl::StatusCode conflict_code) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<const JobState*> FindJob(const std::string& job_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job, if `generation` is its current, formed generation: NOT_FOUND,
  // FAILED_PRECONDITION (world not formed) or ABORTED (stale) otherwise.
  absl::StatusOr<const JobState*> FindFormedJob(const std::string& job_id,
                                                uint64_t generation) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Validates a store scope and returns its key.
  absl::StatusOr<RendezvousStore::Scope> CheckScope(
      const shard::v1::StoreScope& scope) ABSL_LOCKS_EXCLUDED(mu_);

  const CoordinatorOptions options_;
  EpochOrderCache orders_;
  RendezvousStore rendezvous_;

  mutable absl::Mutex mu_;
  CoordinatorState state_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<storage::StateLog> log_ ABSL_GUARDED_BY(mu_);
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
};

// The public view of a job.
shard::v1::Job JobView(const JobState& job);

}  // namespace shard::server

#endif  // SERVER_COORDINATOR_SERVICE_H_
