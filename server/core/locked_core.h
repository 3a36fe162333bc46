// The coordinator's core while its mutex is held (coordinator_core.h): the
// questions the services ask about the state, and the state updates they
// make, each with everything it entails (the journal, leases, rendezvous
// generations, epoch orders, waking the calls parked on the job).
//
// Made only by CoordinatorCore (Mutate, Read, Decide) and for a parked
// call's decision, and valid for that one call: never kept, never shared
// between threads. Each method checks that the core's mutex is held.
// Errors are the answers the services give: NOT_FOUND, ABORTED,
// FAILED_PRECONDITION, INVALID_ARGUMENT as documented in
// proto/shard/v1/shard.proto, UNAVAILABLE once the journal broke.
#ifndef SERVER_CORE_LOCKED_CORE_H_
#define SERVER_CORE_LOCKED_CORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/plan/layouts/shard_layout.h"
#include "server/core/lease_table.h"
#include "server/core/write_path.h"
#include "server/plans/epoch_order_cache.h"
#include "server/state/coordinator_state.h"
#include "server/state/tenant_limits.h"
#include "server/storage/state_store.h"
#include "server/waiting/after_unlock.h"
#include "server/waiting/parked_calls.h"
#include "server/waiting/reply.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

class CoordinatorCore;

// The identity of the job's orders.
JobIncarnation IncarnationOf(const JobState& job);

class LockedCore {
 public:
  // What MaybeFormWorld may do to a world that is formed already.
  enum class FormedWorld {
    kKeep,   // nothing
    kGrow,   // replace it by a larger one if members wait to join (elastic
             // growth at a commit point)
    kRenew,  // replace it, at least as large: its rendezvous keys were lost
  };
  // Decides a parked call: answers it (AnswerWhenDurable) and returns
  // true, or returns false to keep it waiting; see ParkedCalls::Decision.
  using Decision = absl::AnyInvocable<bool(LockedCore&, ParkedCalls::Why)>;

  const CoordinatorState& state() const;
  // UNAVAILABLE while draining or once the journal broke.
  absl::Status CheckServing() const;

  // The job, NOT_FOUND if there is none; a call that finds a job keeps it
  // from expiring as idle for another idle_job_ttl.
  absl::StatusOr<const JobState*> FindJob(const std::string& job_id);
  // The job, if `generation` is its current, formed generation: NOT_FOUND
  // (unknown job, or a generation of an earlier job of that id),
  // FAILED_PRECONDITION (generation 0 while no world is formed) or ABORTED
  // (stale or ended) otherwise.
  absl::StatusOr<const JobState*> FindFormedJob(const std::string& job_id,
                                                uint64_t generation);
  // OK if rendezvous store calls may use `scope`: the job's formed
  // generation, whose keys this process still has (ABORTED for keys a
  // restart or failover lost), called by a member of its world
  // (JobState::CheckWorldMember).
  absl::Status CheckStoreScope(const shard::v1::StoreScope& scope);

  // How a request's spec must match an existing job's (the costs' sum
  // aside: the job keeps its own).
  enum class SpecMatch {
    kExact,   // CreateJob: equal (normalised)
    kLaunch,  // JoinJob: equal, but for an elastic job's world size within
              // its bounds (a launch's size)
  };
  // Creates the job or checks that the stored spec matches `spec` as
  // `match` says; `conflict_code` is the error for a spec that does not,
  // RESOURCE_EXHAUSTED for a new job past its tenant's quota of jobs.
  // A created job has its epoch 0 prepared and is told to the core's
  // JobCreatedObserver.
  absl::StatusOr<const JobState*> CreateOrMatchJob(
      const std::string& job_id, const shard::v1::JobSpec& spec,
      SpecMatch match, absl::StatusCode conflict_code);
  // Deletes the job (journaled), ends its parked calls, store and orders.
  absl::Status EraseJob(const std::string& job_id, absl::string_view reason);

  // Adds the member to the existing job (or counts a member awaiting
  // re-join again); a member joining from a restarted process (another
  // `incarnation` than the one it joined with) is removed first, ending its
  // generation. `launch_world_size` (0: not said) is the world its launcher
  // started it in, which a world forming afresh waits for. Then forms the
  // world if the members allow it, renewing it if the member's world lost
  // its rendezvous keys, and renews the lease. A new member past its
  // tenant's quota of ranks is RESOURCE_EXHAUSTED.
  absl::Status JoinMember(const std::string& job_id,
                          const std::string& member_id, uint64_t incarnation,
                          std::optional<uint32_t> requested_rank,
                          uint32_t launch_world_size);
  // Journals MemberRemoved (ending the generation if the member was in
  // it), then re-forms the world if the remaining members allow it. OK if
  // it is no member.
  absl::Status RemoveMember(const std::string& job_id,
                            const std::string& member_id,
                            absl::string_view reason);
  // Forms a new generation when the job's members allow it: no world and
  // enough members (JobState::WorldSizeAwaited),
  // or a formed world as `formed` allows. The new world's layout starts at
  // the committed progress.
  absl::Status MaybeFormWorld(const std::string& job_id, FormedWorld formed);
  // Journals the job's committed progress if it moved (the state refuses
  // progress that goes back) and, at a new epoch, releases older orders.
  absl::Status RecordProgress(const std::string& job_id, uint64_t epoch,
                              uint64_t position);
  // The leases and job activity.
  LeaseTable& leases();

  // Parks a call on the job `job_id` until `decision` answers it: asked
  // again (kWoken) whenever the job's state changes, and at `deadline`,
  // at `cancellation` (may be null) or at the core's end.
  void Park(const std::string& job_id, absl::Time deadline, Decision decision,
            const std::shared_ptr<Cancellation>& cancellation);
  // Answers `reply` with `answer` once everything journaled so far is
  // durable, registering that wait after the core's lock is let go.
  template <typename Response>
  void AnswerWhenDurable(Reply<Response> reply,
                         absl::StatusOr<Response> answer) {
    then_.Add([log = &journal(), journaled = journaled(),
               reply = std::move(reply), answer = std::move(answer)]() mutable {
      ReplyWhenDurable(*log, journaled, std::move(reply), std::move(answer));
    });
  }

 private:
  friend class CoordinatorCore;
  // `then` runs once the core's lock is let go: the answers of the calls
  // this one woke.
  LockedCore(CoordinatorCore& core, AfterUnlock& then)
      : core_(core), then_(then) {}

  WritePath& writes() const;
  storage::StateStore& journal() const;
  uint64_t journaled() const;
  // Whether `member_id` is in the job's formed world whose rendezvous keys
  // this process lost, so it cannot form its process group there.
  bool LostRendezvousOf(const JobState& job,
                        const std::string& member_id) const;
  // The tenant of `job_id` (CoordinatorOptions::tenant_limits_of; null:
  // none).
  std::shared_ptr<const TenantLimits> TenantOf(absl::string_view job_id) const;
  // RESOURCE_EXHAUSTED when creating `job_id` would pass its tenant's
  // quota of jobs, or a new member of it its quota of ranks (the members
  // its jobs hold).
  absl::Status CheckTenantJobs(absl::string_view job_id) const;
  absl::Status CheckTenantRanks(absl::string_view job_id) const;

  CoordinatorCore& core_;
  AfterUnlock& then_;
};

}  // namespace shard::server

#endif  // SERVER_CORE_LOCKED_CORE_H_
