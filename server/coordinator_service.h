// The coordinator's request handling, independent of gRPC.
//
// Validates each request's shape, turns accepted mutations into state
// updates for the write path (write_path.h: CoordinatorState::Check is the
// one home of every state-dependent rule) and answers with absl::Status
// codes as documented in proto/shard/v1/shard.proto. One async model: a
// call that changes state is StartX(request, reply) and answers through
// Mutate (or, for a join, its parked decision) with ReplyWhenDurable, so no
// thread ever waits for the journal's fsync on behalf of a call; calls that
// only read or change memory return their answer. Owns the locking: every
// method is thread-safe. Drain() makes every call (including waiting ones)
// answer UNAVAILABLE.
//
// Files: coordinator_service.cc (jobs, joins, commits), coordinator_
// membership.cc (leases, leaving, forming worlds), coordinator_shards.cc
// (streams, previews). The c10d Store RPCs are store(), a StoreService
// whose scope check is this service's.
#ifndef SERVER_COORDINATOR_SERVICE_H_
#define SERVER_COORDINATOR_SERVICE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/plan/shard_layout.h"
#include "server/coordinator_state.h"
#include "server/epoch_order_cache.h"
#include "server/lease_table.h"
#include "server/parked_calls.h"
#include "server/rendezvous_store.h"
#include "server/reply.h"
#include "server/shard_cursor.h"
#include "server/storage/state_log.h"
#include "server/store_service.h"
#include "server/waiting_calls.h"
#include "server/write_path.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

struct CoordinatorOptions {
  // Largest shuffled epoch order one job may hold in memory; CreateJob of a
  // bigger job is refused. The cache may hold two per job (current + next).
  uint64_t max_order_bytes = uint64_t{4} << 30;
  // All epoch orders together (being computed, cached or read by streams);
  // see EpochOrderCache. Unlimited by default here; shardd derives its
  // default from the machine's memory.
  uint64_t order_cache_bytes = EpochOrderCache::kUnlimited;
  // Indices per streamed chunk when the request does not say.
  uint32_t default_chunk_indices = 16384;
  // Upper clamp for a requested chunk size.
  uint32_t max_chunk_indices = 65536;
  // Upper clamp for every wait a request asks for (JoinJob's
  // wait_for_world_ms, the store's wait_ms).
  absl::Duration max_wait = absl::Minutes(5);
  // Calls that may wait at once (joins, store gets and waits); more answer
  // RESOURCE_EXHAUSTED.
  size_t max_waiting_calls = 10000;
  // Key, value, per-generation and total limits of the rendezvous store.
  RendezvousLimits rendezvous;
  // A member that sends no heartbeat (or other member call) for this long
  // is removed and its generation ends.
  absl::Duration lease = absl::Seconds(10);
  // A job with no member and no call naming it for this long is deleted
  // (journaled like DeleteJob); zero keeps jobs forever. A job with a
  // member never expires. Checked by ExpireLeases().
  absl::Duration idle_job_ttl = absl::Hours(7 * 24);
  // Run ExpireLeases() on a background thread every lease / 4. Tests with a
  // fake clock turn this off and call ExpireLeases() themselves.
  bool expire_leases_in_background = true;
  // The clock leases are measured with.
  std::function<absl::Time()> now = [] { return absl::Now(); };
};

class CoordinatorService {
 public:
  // Threads answering parked calls (never waiting for the disk: a durable
  // answer goes out from the journal's writer thread).
  static constexpr int kCompletionThreads = 2;

  // In-memory service (tests).
  explicit CoordinatorService(CoordinatorOptions options = {});
  // A service over recovered durable state: every accepted mutation is
  // applied under the lock and queued in `log`, and answered only once the
  // log made it durable (group commit; reads and heartbeats never wait for
  // the disk). Once the log breaks every call answers its UNAVAILABLE
  // error. Recovered members get a full lease from now.
  CoordinatorService(CoordinatorOptions options, storage::OpenedLog opened);
  // The same over any durable store, holding `recovered` (the state the
  // store's last sequence describes).
  CoordinatorService(CoordinatorOptions options,
                     std::unique_ptr<storage::StateStore> store,
                     CoordinatorState recovered);
  // Stops the lease thread.
  ~CoordinatorService();

  // Epoch orders held or being computed, their bytes (including orders
  // only streams still read) and the evictions to make room (for tests and
  // metrics).
  size_t cached_orders() const { return orders_.size(); }
  uint64_t order_bytes() const { return orders_.bytes(); }
  uint64_t order_evictions() const { return orders_.evictions(); }
  // Jobs deleted because they stayed idle for idle_job_ttl (metrics).
  uint64_t idle_jobs_expired() const ABSL_LOCKS_EXCLUDED(mu_);

  // Creates the job (ALREADY_EXISTS for another spec under its id).
  void StartCreateJob(const shard::v1::CreateJobRequest& request,
                      Reply<shard::v1::Job> reply) ABSL_LOCKS_EXCLUDED(mu_);
  // Admin: deletes the job (journaled); see shard.proto for the contract.
  void StartDeleteJob(const shard::v1::DeleteJobRequest& request,
                      Reply<shard::v1::DeleteJobResponse> reply)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<shard::v1::Job> GetJob(const shard::v1::GetJobRequest& request)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<shard::v1::ListJobsResponse> ListJobs(
      const shard::v1::ListJobsRequest& request) ABSL_LOCKS_EXCLUDED(mu_);

  // Joins and, if the request asks to wait, parks the call (no thread is
  // held) until the world including the member formed, the wait (at most
  // max_wait) ends, `call_deadline` passes, the service drains or the call
  // is cancelled (through the returned handle). RESOURCE_EXHAUSTED when it
  // would wait while max_waiting_calls calls already do (the member stays
  // joined).
  ParkedCalls::Handle StartJoinJob(const shard::v1::JoinJobRequest& request,
                                   absl::Time call_deadline,
                                   Reply<shard::v1::JoinJobResponse> reply)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Validates a stream request; `reply` gets a cursor over the rank's
  // shard once the epoch order is ready (on this thread if it is, or small
  // enough to compute here; else on the thread that computed it). Never
  // waits behind another job's order computation; waiting for order memory
  // ends after max_wait.
  void StartOpenShard(const shard::v1::StreamShardRequest& request,
                      Reply<ShardCursor> reply) ABSL_LOCKS_EXCLUDED(mu_);
  // A page of a rank's shard as the job's spec plans it, without waiting
  // on a thread: `reply` runs once the epoch order is ready (see
  // StartOpenShard). Waiting for order memory ends at `call_deadline` or
  // after max_wait, whichever comes first, with RESOURCE_EXHAUSTED naming
  // the budget.
  void StartPreviewShard(const shard::v1::PreviewShardRequest& request,
                         absl::Time call_deadline,
                         Reply<shard::v1::PreviewShardResponse> reply)
      ABSL_LOCKS_EXCLUDED(mu_);

  absl::StatusOr<shard::v1::HeartbeatResponse> Heartbeat(
      const shard::v1::HeartbeatRequest& request) ABSL_LOCKS_EXCLUDED(mu_);
  void StartLeave(const shard::v1::LeaveRequest& request,
                  Reply<shard::v1::LeaveResponse> reply)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Removes every member whose lease ran out (journaled like a Leave),
  // then deletes the jobs idle for idle_job_ttl. Members waiting in JoinJob
  // are alive. `stalled`: time since the last check during which this
  // process itself could not run; it is not counted against members (their
  // heartbeats could not be served) nor against idle jobs.
  void ExpireLeases(absl::Duration stalled = absl::ZeroDuration())
      ABSL_LOCKS_EXCLUDED(mu_);

  void StartCommitProgress(const shard::v1::CommitProgressRequest& request,
                           Reply<shard::v1::CommitProgressResponse> reply)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Calls waiting right now, by kind (metrics).
  size_t waiting_calls(WaitingCalls::Kind kind) const {
    return waiting_calls_.waiting(kind);
  }
  // Bytes the rendezvous store holds (metrics).
  size_t rendezvous_bytes() const { return rendezvous_.total_bytes(); }

  // The rendezvous key-value RPCs of each job's current generation.
  StoreService& store() { return store_service_; }

  // From now on every call answers UNAVAILABLE; waiting joins and store
  // waits wake up, calls waiting for order memory answer at once, and
  // next epochs are no longer prepared.
  void Drain() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // The one way a mutating call answers: runs `change` under the lock if
  // the service is serving, then replies with its result once everything
  // journaled by then is durable (an error at once).
  template <typename Response>
  void Mutate(Reply<Response> reply,
              absl::FunctionRef<absl::StatusOr<Response>()> change)
      ABSL_LOCKS_EXCLUDED(mu_);
  // UNAVAILABLE while draining or once the journal broke.
  absl::Status CheckServing() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return writes_.CheckServing();
  }
  const CoordinatorState& state() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return writes_.state();
  }
  // Creates the job or checks that the stored spec equals `spec`.
  // `conflict_code` is the error for a different stored spec.
  absl::StatusOr<const JobState*> CreateOrMatchJob(
      const std::string& job_id, const shard::v1::JobSpec& spec,
      absl::StatusCode conflict_code) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job, NOT_FOUND if there is none; a call that finds a job keeps it
  // from expiring as idle for another idle_job_ttl.
  absl::StatusOr<const JobState*> FindJob(const std::string& job_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // FAILED_PRECONDITION when `incarnation` (a Heartbeat's or Leave's) names
  // an older process of a member that re-joined from a restarted one.
  static absl::Status CheckCurrentIncarnation(const JobState& job,
                                              const std::string& member_id,
                                              uint64_t incarnation);
  // Deletes the job (journaled), ends its waits, store and orders; the
  // caller replies when durable.
  absl::Status EraseJob(const std::string& job_id, absl::string_view reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Deletes the jobs without members whose last call is idle_job_ttl ago.
  void ExpireIdleJobs() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // JoinJob up to its wait: validates, creates or matches the job, adds the
  // member (re-joining a restarted one), forms the world if it can, renews
  // the lease.
  absl::Status AddMember(const shard::v1::JoinJobRequest& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a join of `member_id` has its answer: the world including it
  // formed, it is no longer a member, the job is gone or the service stopped
  // serving.
  bool JoinSettled(const std::string& job_id,
                   const std::string& member_id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The answer of a join now (DEADLINE_EXCEEDED if `waited` and the member
  // is not in the world).
  absl::StatusOr<shard::v1::JoinJobResponse> JoinAnswer(
      const std::string& job_id, const std::string& member_id, bool waited)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The decision of a join parked in parked_ (see ParkedCalls): it holds
  // the call's waiting slot and reply, and runs under mu_.
  struct ParkedJoin {
    CoordinatorService* service;
    std::string job_id;
    std::string member_id;
    WaitingCalls::Slot slot;
    Reply<shard::v1::JoinJobResponse> reply;

    std::optional<ParkedCalls::Completion> operator()(ParkedCalls::Why why)
        ABSL_EXCLUSIVE_LOCKS_REQUIRED(service->mu_);
  };
  // CommitProgress under the lock: validates the position against the
  // world's layout, journals the progress and admits waiting members.
  absl::StatusOr<shard::v1::CommitProgressResponse> CommitLocked(
      const shard::v1::CommitProgressRequest& request)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // NOT_FOUND if `generation` was given out before `job` was created: the
  // caller belongs to a deleted job that had the same id.
  static absl::Status CheckNotFromEarlierJob(const JobState& job,
                                             uint64_t generation);
  // NOT_FOUND unless `joined_incarnation` (JoinJobRequest.job_incarnation)
  // is 0 or the job's current incarnation: a member of a deleted job must
  // not re-create it, nor join its successor.
  absl::Status CheckJoinedIncarnation(const std::string& job_id,
                                      uint64_t joined_incarnation) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A validated stream request with its claimed epoch order.
  struct PreparedShard {
    EpochOrderCache::Claim claim;
    plan::ShardLayout layout;
    uint32_t rank;
    uint64_t offset;  // In the rank's shard.
    uint32_t chunk;   // Indices per chunk.

    absl::StatusOr<ShardCursor> Open(
        absl::StatusOr<EpochOrderCache::Order> order) const;
  };
  // Validates a stream request against the state and claims its order.
  absl::StatusOr<PreparedShard> PrepareShard(
      const shard::v1::StreamShardRequest& request) ABSL_LOCKS_EXCLUDED(mu_);
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
  // What MaybeFormWorld may do to a world that is formed already.
  enum class FormedWorld {
    kKeep,   // nothing
    kGrow,   // replace it by a larger one if members wait to join (elastic
             // growth at a commit point)
    kRenew,  // replace it, at least as large: its rendezvous keys were lost
  };
  // Forms a new generation when the job's members allow it: no world and
  // enough members (world_size for the first one, min_world_size after),
  // or a formed world as `formed` allows. The new world's layout starts at
  // the committed progress.
  absl::Status MaybeFormWorld(const std::string& job_id, FormedWorld formed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `member_id` is in the job's formed world whose rendezvous keys
  // this process lost (they live in memory: a restart or failover happened
  // since the world formed), so it cannot form its process group there.
  bool LostRendezvousOf(const JobState& job, const std::string& member_id) const
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
  void LeaseLoop() ABSL_LOCKS_EXCLUDED(mu_);

  // OK if store calls may use `scope`: the job's formed generation.
  absl::Status CheckStoreScope(const shard::v1::StoreScope& scope) const
      ABSL_LOCKS_EXCLUDED(mu_);

  const CoordinatorOptions options_;
  EpochOrderCache orders_;
  RendezvousStore rendezvous_;
  WaitingCalls waiting_calls_;
  StoreService store_service_;

  mutable absl::Mutex mu_;
  const std::unique_ptr<storage::StateStore> log_;  // Thread-safe.
  WritePath writes_ ABSL_GUARDED_BY(mu_);
  // Leases and job activity. Mutable: reads (FindJob) count as activity.
  mutable LeaseTable leases_ ABSL_GUARDED_BY(mu_);
  // Joins waiting for their world, by job id.
  ParkedCalls parked_{&mu_, kCompletionThreads};
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t idle_jobs_expired_ ABSL_GUARDED_BY(mu_) = 0;
  // The rendezvous store lives in memory: the generations recovered from
  // the store (up to this one) lost their keys, and their store calls
  // answer ABORTED so that trainers form a new generation instead of
  // waiting for keys that are gone.
  uint64_t store_lost_through_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread lease_thread_;
};

template <typename Response>
void CoordinatorService::Mutate(
    Reply<Response> reply,
    absl::FunctionRef<absl::StatusOr<Response>()> change) {
  absl::StatusOr<Response> answer;
  uint64_t journaled;
  {
    absl::MutexLock lock(&mu_);
    if (absl::Status serving = CheckServing(); !serving.ok()) {
      answer = serving;
    } else {
      answer = change();
    }
    journaled = writes_.journaled();
  }
  ReplyWhenDurable(*log_, journaled, std::move(reply), std::move(answer));
}

// The public view of a job.
shard::v1::Job JobView(const JobState& job);
// The identity of the job's orders.
JobIncarnation IncarnationOf(const JobState& job);

}  // namespace shard::server

#endif  // SERVER_COORDINATOR_SERVICE_H_
