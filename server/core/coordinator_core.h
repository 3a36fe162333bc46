// The coordinator's core: the one place that decides. It owns the state
// (behind its write path and journal), the members' leases, the epoch
// orders, the rendezvous store and the calls waiting for a condition on the
// state, all behind one mutex.
//
// The services above it (job_service.h, membership_service.h,
// progress_service.h, shard_service.h, store_service.h) translate requests
// into the core's questions and state updates. They ask them of a
// LockedCore (locked_core.h), the core while its mutex is held, which the
// core hands to the function given to Mutate(), Read() or Decide() for the
// length of that one call. A mutation answers once what it journaled is
// durable (ReplyWhenDurable), so no thread ever waits for the disk on behalf
// of a call. The calls a change wakes (parked joins, store waits of an ended
// generation) are answered by the thread that made the change, once it let
// go of the core's lock (after_unlock.h).
//
// Thread-safe. Drain() makes every call, waiting ones included, answer
// UNAVAILABLE. Destroying the core ends the calls still parked (kEnded);
// their decisions must not refer to the services above it.
#ifndef SERVER_CORE_COORDINATOR_CORE_H_
#define SERVER_CORE_COORDINATOR_CORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/core/lease_table.h"
#include "server/core/locked_core.h"
#include "server/core/rendezvous_store.h"
#include "server/core/write_path.h"
#include "server/plans/cost_store.h"
#include "server/plans/epoch_order_cache.h"
#include "server/state/coordinator_state.h"
#include "server/state/tenant_limits.h"
#include "server/storage/state_store.h"
#include "server/waiting/after_unlock.h"
#include "server/waiting/parked_calls.h"
#include "server/waiting/reply.h"
#include "server/waiting/waiting_calls.h"

namespace shard::server {

struct CoordinatorOptions {
  // Largest shuffled epoch order one job may hold in memory; CreateJob of a
  // bigger job is refused. The cache may hold three per job (previous,
  // current and next; the next one only with free room in the budget).
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
  // Heartbeats a second the coordinator asks of all its ranks at most: a
  // heartbeat's answer asks for the next one no sooner than ranks held /
  // this, and leases stretch to kPacesPerLease such intervals
  // (lease_table.h). 0: members heartbeat at their own interval.
  uint64_t max_heartbeat_rate = 15000;
  // A job with no member and no call naming it for this long is deleted
  // (journaled like DeleteJob); zero keeps jobs forever. A job with a
  // member never expires. Checked by MembershipService::ExpireLeases().
  absl::Duration idle_job_ttl = absl::Hours(7 * 24);
  // Run ExpireLeases() on a background thread every lease / 4. Tests with a
  // fake clock turn this off and call ExpireLeases() themselves.
  bool expire_leases_in_background = true;
  // Where the costs of balanced-batch jobs are kept durably (see
  // CostStore): files under --data-dir, etcd for a replica's term, or
  // nowhere (memory only) when null; at most max_cost_bytes resident.
  std::shared_ptr<storage::CostBlobs> cost_blobs;
  uint64_t max_cost_bytes = uint64_t{4} << 30;
  // Costs no job names, and uploads that stalled, are removed after this
  // long (CostStore::Options::unclaimed_ttl).
  absl::Duration cost_upload_ttl = absl::Minutes(10);
  // The tenant of a job under --auth-policy (unset: none): its quotas on
  // jobs and ranks are checked as jobs are created and members join, on
  // store bytes by the rendezvous store, on waiting calls by
  // WaitingCalls (cost bytes: CostStore::Put's uploader).
  TenantLimitsOf tenant_limits_of;
  // The clock leases are measured with.
  std::function<absl::Time()> now = [] { return absl::Now(); };
  // Told how long each hold of the core's lock lasted: each Decide (every
  // call, every lease check, every scrape) and each hold the parked calls
  // take (a batch of woken joins, a deadline, a cancellation); called with
  // the lock still held, so it must be quick and must not call the
  // coordinator. Unset: not measured.
  LockHoldObserver on_lock_held;
};

class CoordinatorCore {
 public:
  // The core over `store` (thread-safe, owned), holding `recovered`: the
  // state the store's last sequence describes. Recovered members get a
  // full lease from now, jobs with members have their current epoch's
  // order prepared, and a world the recovered members allow is formed.
  CoordinatorCore(CoordinatorOptions options,
                  std::unique_ptr<storage::StateStore> store,
                  CoordinatorState recovered);
  ~CoordinatorCore();
  CoordinatorCore(const CoordinatorCore&) = delete;
  CoordinatorCore& operator=(const CoordinatorCore&) = delete;

  const CoordinatorOptions& options() const { return options_; }
  // Thread-safe parts the services use without the core's lock.
  EpochOrderCache& orders() { return orders_; }
  const EpochOrderCache& orders() const { return orders_; }
  RendezvousStore& rendezvous() { return rendezvous_; }
  const RendezvousStore& rendezvous() const { return rendezvous_; }
  WaitingCalls& waiting_calls() { return waiting_calls_; }
  const WaitingCalls& waiting_calls() const { return waiting_calls_; }
  CostStore& costs() { return costs_; }
  const CostStore& costs() const { return costs_; }

  // The one way a mutating call answers: runs `change` on the locked core
  // if it serves (else answers its UNAVAILABLE), then replies with the
  // result once everything journaled by then is durable (an error at once).
  template <typename Response>
  void Mutate(Reply<Response> reply,
              absl::FunctionRef<absl::StatusOr<Response>(LockedCore&)> change)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `read` on the locked core if it serves; UNAVAILABLE if not.
  template <typename Response>
  absl::StatusOr<Response> Read(
      absl::FunctionRef<absl::StatusOr<Response>(LockedCore&)> read)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `decide` on the locked core, serving or not, then (without the
  // lock) the answers to the calls it woke, and returns the journal
  // sequence an answer to what it decided waits for (AnswerWhenDurable).
  uint64_t Decide(absl::FunctionRef<void(LockedCore&)> decide)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Answers `reply` once the journal holds `journaled` durably
  // (ReplyWhenDurable); call it without the lock.
  template <typename Response>
  void AnswerWhenDurable(uint64_t journaled, Reply<Response> reply,
                         absl::StatusOr<Response> answer) {
    ReplyWhenDurable(*log_, journaled, std::move(reply), std::move(answer));
  }

  // Told of each job created, under the core's lock right after its
  // creation was journaled and its epoch 0 prepared; it must be quick and
  // must not call the core. Set once, before the core serves calls.
  using JobCreatedObserver = std::function<void(LockedCore&, const JobState&)>;
  void ObserveCreatedJobs(JobCreatedObserver observer) ABSL_LOCKS_EXCLUDED(mu_);

  // From now on every call answers UNAVAILABLE; parked joins and store
  // waits wake up, calls waiting for order memory answer at once, and
  // next epochs are no longer prepared.
  void Drain() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class LockedCore;

  // `run`'s answer if the core serves; its UNAVAILABLE if not.
  template <typename Response>
  static absl::StatusOr<Response> IfServing(
      LockedCore& core,
      absl::FunctionRef<absl::StatusOr<Response>(LockedCore&)> run) {
    if (absl::Status serving = core.CheckServing(); !serving.ok()) {
      return serving;
    }
    return run(core);
  }

  const CoordinatorOptions options_;
  EpochOrderCache orders_;
  RendezvousStore rendezvous_;
  WaitingCalls waiting_calls_;
  CostStore costs_;

  mutable absl::Mutex mu_;
  const std::unique_ptr<storage::StateStore> log_;  // Thread-safe.
  WritePath writes_ ABSL_GUARDED_BY(mu_);
  // Leases and job activity. Reads (FindJob) count as activity.
  LeaseTable leases_ ABSL_GUARDED_BY(mu_);
  // Calls waiting for the state of a job to change (joins), by job id.
  ParkedCalls parked_{&mu_, options_.on_lock_held};
  // The rendezvous store lives in memory: the generations recovered from
  // the store (up to this one) lost their keys, and their store calls
  // answer ABORTED so that trainers form a new generation instead of
  // waiting for keys that are gone.
  const uint64_t store_lost_through_;
  JobCreatedObserver on_job_created_ ABSL_GUARDED_BY(mu_);
};

template <typename Response>
void CoordinatorCore::Mutate(
    Reply<Response> reply,
    absl::FunctionRef<absl::StatusOr<Response>(LockedCore&)> change) {
  absl::StatusOr<Response> answer;
  const uint64_t journaled = Decide(
      [&](LockedCore& core) { answer = IfServing<Response>(core, change); });
  AnswerWhenDurable(journaled, std::move(reply), std::move(answer));
}

template <typename Response>
absl::StatusOr<Response> CoordinatorCore::Read(
    absl::FunctionRef<absl::StatusOr<Response>(LockedCore&)> read) {
  absl::StatusOr<Response> answer;
  Decide([&](LockedCore& core) { answer = IfServing<Response>(core, read); });
  return answer;
}

}  // namespace shard::server

#endif  // SERVER_CORE_COORDINATOR_CORE_H_
