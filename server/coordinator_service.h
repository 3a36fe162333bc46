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
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/plan/shard_layout.h"
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
  // A member that sends no heartbeat (or other member call) for this long
  // is removed and its generation ends.
  absl::Duration lease = absl::Seconds(10);
  // Run ExpireLeases() on a background thread every lease / 4. Tests with a
  // fake clock turn this off and call ExpireLeases() themselves.
  bool expire_leases_in_background = true;
  // The clock leases are measured with.
  std::function<absl::Time()> now = [] { return absl::Now(); };
};

class CoordinatorService {
 public:
  // In-memory service (tests).
  explicit CoordinatorService(CoordinatorOptions options = {});
  // A service over recovered durable state: every accepted mutation is
  // appended to `log` (and fsynced) before it is applied and answered.
  // Recovered members get a full lease from now.
  CoordinatorService(CoordinatorOptions options, storage::OpenedLog opened);
  // Stops the lease thread.
  ~CoordinatorService();

  absl::StatusOr<shard::v1::Job> CreateJob(
      const shard::v1::CreateJobRequest& request) ABSL_LOCKS_EXCLUDED(mu_);
  // Admin: deletes the job (journaled); see shard.proto for the contract.
  absl::StatusOr<shard::v1::DeleteJobResponse> DeleteJob(
      const shard::v1::DeleteJobRequest& request) ABSL_LOCKS_EXCLUDED(mu_);
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

  absl::StatusOr<shard::v1::HeartbeatResponse> Heartbeat(
      const shard::v1::HeartbeatRequest& request) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<shard::v1::LeaveResponse> Leave(
      const shard::v1::LeaveRequest& request) ABSL_LOCKS_EXCLUDED(mu_);
  // Removes every member whose lease ran out (journaled like a Leave).
  void ExpireLeases() ABSL_LOCKS_EXCLUDED(mu_);

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
  // Checks the update against the state, journals it, then applies it. On
  // error nothing is applied (INTERNAL for an update that does not fit: the
  // caller validated it wrongly).
  absl::Status Persist(const shard::state::v1::StateUpdate& update)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Creates the job or checks that the stored spec equals `spec`.
  // `conflict_code` is the error for a different stored spec.
  absl::StatusOr<const JobState*> CreateOrMatchJob(
      const std::string& job_id, const shard::v1::JobSpec& spec,
      absl::StatusCode conflict_code) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<const JobState*> FindJob(const std::string& job_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // NOT_FOUND if `generation` was given out before `job` was created: the
  // caller belongs to a deleted job that had the same id.
  static absl::Status CheckNotFromEarlierJob(const JobState& job,
                                             uint64_t generation);
  // INVALID_ARGUMENT / OUT_OF_RANGE unless the request's rank and start
  // position fit `layout`.
  static absl::Status CheckStreamStart(
      const plan::ShardLayout& layout,
      const shard::v1::StreamShardRequest& request);
  // The job, if `generation` is its current, formed generation: NOT_FOUND
  // (unknown job, or a generation of an earlier job of that id),
  // FAILED_PRECONDITION (generation 0 while no world is formed) or ABORTED
  // (stale or ended) otherwise.
  absl::StatusOr<const JobState*> FindFormedJob(const std::string& job_id,
                                                uint64_t generation) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forms a new generation when the job's members allow it: no world and
  // enough members (world_size for the first one, min_world_size after),
  // or, with `admit_waiting`, a formed world with members waiting to join
  // (elastic growth at a commit point). The new world's layout starts at
  // the committed progress.
  absl::Status MaybeFormWorld(const std::string& job_id, bool admit_waiting)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Journals MemberRemoved (ending the generation if the member was in
  // it), then re-forms the world if the remaining members allow it.
  absl::Status RemoveMember(const std::string& job_id,
                            const std::string& member_id,
                            absl::string_view reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The current generation's layout of `epoch`: FAILED_PRECONDITION for an
  // epoch completed before the generation formed.
  absl::StatusOr<plan::ShardLayout> LayoutFor(const JobState& job,
                                              uint64_t epoch) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RenewLease(const std::string& job_id, const std::string& member_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LeaseLoop() ABSL_LOCKS_EXCLUDED(mu_);

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
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Incarnation each (job, member) last joined with (not journaled: after a
  // coordinator restart the next join records it again).
  std::map<std::pair<std::string, std::string>, uint64_t> incarnations_
      ABSL_GUARDED_BY(mu_);
  // Last sign of life of each (job, member).
  std::map<std::pair<std::string, std::string>, absl::Time> last_seen_
      ABSL_GUARDED_BY(mu_);
  std::thread lease_thread_;
};

// The public view of a job.
shard::v1::Job JobView(const JobState& job);
// The identity of the job's orders.
JobIncarnation IncarnationOf(const JobState& job);

}  // namespace shard::server

#endif  // SERVER_COORDINATOR_SERVICE_H_
