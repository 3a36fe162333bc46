#include "server/services/membership_service.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/plan/spec/job_spec.h"
#include "server/core/lease_table.h"
#include "server/runtime/event_log.h"
#include "server/waiting/waiting_calls.h"

namespace shard::server {
namespace {

// NOT_FOUND unless `joined_incarnation` (JoinJobRequest.job_incarnation) is
// 0 or the job's current incarnation: a member of a deleted job must not
// re-create it, nor join its successor.
absl::Status CheckJoinedIncarnation(const CoordinatorState& state,
                                    const std::string& job_id,
                                    uint64_t joined_incarnation) {
  if (joined_incarnation == 0) return absl::OkStatus();
  const JobState* job = state.FindJob(job_id);
  if (job != nullptr && job->incarnation == joined_incarnation) {
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat(
      "job \"", job_id,
      "\" was deleted (this process was a member of its "
      "incarnation ",
      joined_incarnation, "; ",
      job == nullptr ? std::string("no job of that id exists now")
                     : absl::StrCat("the job of that id now is incarnation ",
                                    job->incarnation),
      "): this process must stop, not re-join"));
}

// `pace` in milliseconds, rounded up (a member asked to wait never waits
// less), at most what the answer's field holds.
uint32_t WholeMilliseconds(absl::Duration pace) {
  return static_cast<uint32_t>(std::min<int64_t>(
      absl::ToInt64Milliseconds(absl::Ceil(pace, absl::Milliseconds(1))),
      std::numeric_limits<uint32_t>::max()));
}

// The shape of a join: valid ids, and its spec (if any) normalised.
absl::StatusOr<std::optional<shard::v1::JobSpec>> CheckJoinRequest(
    const shard::v1::JoinJobRequest& request, uint64_t max_order_bytes) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) return s;
  if (absl::Status s = plan::ValidateMemberId(request.member_id()); !s.ok()) {
    return s;
  }
  if (!request.has_spec()) return std::nullopt;
  absl::StatusOr<shard::v1::JobSpec> spec =
      plan::NormalizeJobSpec(request.spec(), max_order_bytes);
  if (!spec.ok()) return spec.status();
  return std::optional<shard::v1::JobSpec>(*std::move(spec));
}

// JoinJob up to its wait: creates or matches the job (if the request has
// a spec), then adds the member.
absl::Status AddMember(LockedCore& core,
                       const shard::v1::JoinJobRequest& request,
                       const std::optional<shard::v1::JobSpec>& spec) {
  const std::string& job_id = request.job_id();
  if (absl::Status s = core.CheckServing(); !s.ok()) return s;
  if (absl::Status s = CheckJoinedIncarnation(core.state(), job_id,
                                              request.job_incarnation());
      !s.ok()) {
    return s;
  }
  absl::StatusOr<const JobState*> job =
      spec
          ? core.CreateOrMatchJob(job_id, *spec, LockedCore::SpecMatch::kLaunch,
                                  absl::StatusCode::kFailedPrecondition)
          : core.FindJob(job_id);
  if (!job.ok()) return job.status();
  return core.JoinMember(job_id, request.member_id(), request.incarnation(),
                         request.has_requested_rank()
                             ? std::optional<uint32_t>(request.requested_rank())
                             : std::nullopt,
                         spec ? spec->world_size() : 0);
}

// The ranks a join of `member_id` would add to those the core holds
// (JobState::RanksCounted), before it is decided.
uint64_t IncomingRanks(const CoordinatorState& state, const std::string& job_id,
                       const std::string& member_id,
                       const std::optional<shard::v1::JobSpec>& spec) {
  const JobState* job = state.FindJob(job_id);
  if (job == nullptr) {
    return spec ? std::max<uint64_t>(1, spec->world_size()) : 0;
  }
  if (job->IsMember(member_id)) return 0;
  const uint64_t members = job->members.size() + 1;
  // A launch past the job's bounds is refused later, by its spec.
  const uint64_t launch =
      spec ? std::min(spec->world_size(), job->spec.max_world_size()) : 0;
  const uint64_t after =
      job->world_formed()
          ? members
          : std::max<uint64_t>({members, job->WorldSizeAwaited(), launch});
  return after - job->RanksCounted();
}

// Where a join of `member_id` stands: the one place its conditions are read.
enum class JoinStands {
  kNotServing,  // The core drains, or its journal broke.
  kJobGone,     // Deleted meanwhile.
  kRemoved,     // No longer a member (left, lease expired, restarted).
  kInWorld,     // The world including it formed.
  kWaiting,     // Still waiting for that world.
};

JoinStands StandingOf(const LockedCore& core, const std::string& job_id,
                      const std::string& member_id) {
  if (!core.CheckServing().ok()) return JoinStands::kNotServing;
  const JobState* job = core.state().FindJob(job_id);
  if (job == nullptr) return JoinStands::kJobGone;
  if (!job->IsMember(member_id)) return JoinStands::kRemoved;
  return job->RankOf(member_id) ? JoinStands::kInWorld : JoinStands::kWaiting;
}

// The answer of a join standing where `standing` says (DEADLINE_EXCEEDED if
// it `waited` and is still waiting).
absl::StatusOr<shard::v1::JoinJobResponse> JoinAnswer(
    LockedCore& core, const std::string& job_id, const std::string& member_id,
    JoinStands standing, bool waited) {
  if (standing == JoinStands::kNotServing) return core.CheckServing();
  absl::StatusOr<const JobState*> current = core.FindJob(job_id);
  if (!current.ok()) return current.status();
  const JobState& state = **current;
  if (standing == JoinStands::kRemoved) {
    return absl::AbortedError(absl::StrCat("member \"", member_id,
                                           "\" was removed from job \"", job_id,
                                           "\" while waiting; join again"));
  }
  core.leases().Renew(job_id, member_id);
  if (standing == JoinStands::kWaiting && waited) {
    return absl::DeadlineExceededError(absl::StrCat(
        "job \"", job_id, "\" has no world including member \"", member_id,
        "\" after waiting (", state.members.size(),
        " members joined; the member stays joined, join again to keep "
        "waiting)"));
  }
  const std::optional<uint32_t> rank = state.RankOf(member_id);
  shard::v1::JoinJobResponse response;
  response.set_rank(rank.value_or(0));
  response.set_world_size(rank ? state.world_size() : 0);
  response.set_generation(state.generation);
  response.set_world_formed(rank.has_value());
  *response.mutable_spec() = state.spec;
  response.set_committed_epoch(state.committed_epoch);
  response.set_committed_position(state.committed_position);
  response.set_job_incarnation(state.incarnation);
  return response;
}

// The decision of a parked join: it holds the call's waiting slot and
// reply. Refers to nothing but the core, which ends it.
struct ParkedJoin {
  std::string job_id;
  std::string member_id;
  WaitingCalls::Slot slot;
  Reply<shard::v1::JoinJobResponse> reply;

  bool operator()(LockedCore& core, ParkedCalls::Why why) {
    const JoinStands standing = StandingOf(core, job_id, member_id);
    if (why == ParkedCalls::Why::kWoken && standing == JoinStands::kWaiting) {
      return false;
    }
    core.leases().EndWait(job_id, member_id);
    // The call stops waiting now, before its answer reaches the client, so
    // that a client which waits again at once finds its slot free.
    const WaitingCalls::Slot stopped_waiting = std::move(slot);
    absl::StatusOr<shard::v1::JoinJobResponse> answer;
    switch (why) {
      case ParkedCalls::Why::kCancelled:
        answer = absl::CancelledError("the client cancelled the join");
        break;
      case ParkedCalls::Why::kEnded:
        answer = absl::UnavailableError("coordinator is shutting down");
        break;
      default:
        answer = JoinAnswer(core, job_id, member_id, standing, /*waited=*/true);
    }
    core.AnswerWhenDurable(std::move(reply), std::move(answer));
    return true;
  }
};

}  // namespace

MembershipService::MembershipService(CoordinatorCore* core) : core_(core) {
  if (core_->options().expire_leases_in_background) {
    lease_thread_ = std::thread([this] { LeaseLoop(); });
  }
}

MembershipService::~MembershipService() {
  {
    absl::MutexLock lock(&stop_mu_);
    stopping_ = true;
  }
  if (lease_thread_.joinable()) lease_thread_.join();
}

void MembershipService::StartJoinJob(const shard::v1::JoinJobRequest& request,
                                     absl::Time call_deadline,
                                     Reply<shard::v1::JoinJobResponse> reply) {
  absl::StatusOr<std::optional<shard::v1::JobSpec>> spec =
      CheckJoinRequest(request, core_->options().max_order_bytes);
  if (!spec.ok()) return std::move(reply)(spec.status());
  if (!spec->has_value()) {
    return Join(request, std::nullopt, call_deadline, std::move(reply));
  }
  // After a restart the costs are read back first (off this thread). The
  // callback holds its own copy of the spec: it is built before the check
  // reads its argument.
  core_->costs().WhenCostsOfChecked(
      **spec, [this, request, spec = **spec, call_deadline,
               reply = std::move(reply)](absl::Status costs) mutable {
        if (!costs.ok()) return std::move(reply)(costs);
        Join(request, spec, call_deadline, std::move(reply));
      });
}

void MembershipService::Join(const shard::v1::JoinJobRequest& request,
                             const std::optional<shard::v1::JobSpec>& spec,
                             absl::Time call_deadline,
                             Reply<shard::v1::JoinJobResponse> reply) {
  const absl::Time deadline = WaitDeadline(
      request.wait_for_world_ms(), core_->options().max_wait, call_deadline);
  const std::string& job_id = request.job_id();
  const std::string& member_id = request.member_id();
  const bool wait_asked = request.wait_for_world_ms() > 0;
  absl::StatusOr<shard::v1::JoinJobResponse> answer;
  bool parked = false;
  const uint64_t journaled = core_->Decide([&](LockedCore& core) {
    // A join that may wait takes its slot first (its job's ranks counted),
    // so one refused at the limit changes nothing.
    std::optional<WaitingCalls::Slot> slot;
    if (wait_asked) {
      absl::StatusOr<WaitingCalls::Slot> entered = core_->waiting_calls().Enter(
          WaitingCalls::Kind::kJoin, job_id,
          IncomingRanks(core.state(), job_id, member_id, spec));
      if (!entered.ok()) {
        answer = entered.status();
        return;
      }
      slot.emplace(*std::move(entered));
    }
    if (absl::Status s = AddMember(core, request, spec); !s.ok()) {
      answer = s;
      return;
    }
    const JoinStands standing = StandingOf(core, job_id, member_id);
    if (!wait_asked || standing != JoinStands::kWaiting) {
      answer = JoinAnswer(core, job_id, member_id, standing, wait_asked);
    } else {
      // A member waiting for its world is alive: its lease does not run
      // out however long the other ranks take to arrive.
      core.leases().BeginWait(job_id, member_id);
      std::shared_ptr<Cancellation> cancellation = reply.cancellation();
      core.Park(
          job_id, deadline,
          ParkedJoin{job_id, member_id, *std::move(slot), std::move(reply)},
          cancellation);
      parked = true;
    }
  });
  if (!parked) {
    core_->AnswerWhenDurable(journaled, std::move(reply), std::move(answer));
  }
}

absl::StatusOr<shard::v1::HeartbeatResponse> MembershipService::Heartbeat(
    const shard::v1::HeartbeatRequest& request) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) return s;
  if (absl::Status s = plan::ValidateMemberId(request.member_id()); !s.ok()) {
    return s;
  }
  return core_->Read<shard::v1::HeartbeatResponse>(
      [&](LockedCore& core) -> absl::StatusOr<shard::v1::HeartbeatResponse> {
        absl::StatusOr<const JobState*> job = core.FindJob(request.job_id());
        if (!job.ok()) return job.status();
        // A process of a deleted job must not keep a same-named member of
        // the re-created job alive.
        if (absl::Status s =
                (*job)->CheckNotFromEarlierJob(request.generation());
            !s.ok()) {
          return s;
        }
        if (!(*job)->IsMember(request.member_id())) {
          return absl::AbortedError(absl::StrCat(
              "member \"", request.member_id(), "\" is not part of job \"",
              request.job_id(), "\" (it left or its lease expired): re-join"));
        }
        if (absl::Status s = (*job)->CheckCurrentIncarnation(
                request.member_id(), request.incarnation());
            !s.ok()) {
          return s;
        }
        const absl::Duration pace = CurrentPace(core);
        core.leases().RenewAtPace(request.job_id(), request.member_id(), pace);
        absl::StatusOr<const JobState*> formed =
            core.FindFormedJob(request.job_id(), request.generation());
        if (!formed.ok()) return formed.status();
        shard::v1::HeartbeatResponse response;
        response.set_generation((*formed)->generation);
        response.set_next_heartbeat_ms(WholeMilliseconds(pace));
        return response;
      });
}

void MembershipService::StartLeave(const shard::v1::LeaveRequest& request,
                                   Reply<shard::v1::LeaveResponse> reply) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) {
    return std::move(reply)(s);
  }
  if (absl::Status s = plan::ValidateMemberId(request.member_id()); !s.ok()) {
    return std::move(reply)(s);
  }
  core_->Mutate<shard::v1::LeaveResponse>(
      std::move(reply),
      [&](LockedCore& core) -> absl::StatusOr<shard::v1::LeaveResponse> {
        absl::StatusOr<const JobState*> job = core.FindJob(request.job_id());
        if (!job.ok()) return job.status();
        if (absl::Status s = (*job)->CheckCurrentIncarnation(
                request.member_id(), request.incarnation());
            !s.ok()) {
          return s;
        }
        if (absl::Status s = core.RemoveMember(request.job_id(),
                                               request.member_id(), "left");
            !s.ok()) {
          return s;
        }
        return shard::v1::LeaveResponse();
      });
}

void MembershipService::LeaseLoop() {
  const absl::Duration tick = core_->options().lease / 4;
  const auto& now = core_->options().now;
  absl::Time due = now() + tick;
  absl::MutexLock lock(&stop_mu_);
  while (!stop_mu_.AwaitWithTimeout(absl::Condition(&stopping_), tick)) {
    stop_mu_.Unlock();
    // Waking up later than due means this process could not run (a stall,
    // a pause of the machine): no member could reach it meanwhile.
    ExpireLeases(std::max(absl::ZeroDuration(), now() - due));
    due = now() + tick;
    stop_mu_.Lock();
  }
}

absl::Duration MembershipService::CurrentPace(LockedCore& core) const {
  return HeartbeatPace(core.state().ranks_held(),
                       core_->options().max_heartbeat_rate);
}

void MembershipService::ExpireLeases(absl::Duration stalled) {
  core_->Decide([&](LockedCore& core) {
    if (!core.CheckServing().ok()) return;
    const absl::Duration lease =
        LeaseAtPace(core_->options().lease, CurrentPace(core));
    core.leases().AddStall(stalled);
    std::vector<std::pair<std::string, std::string>> expired;
    for (const auto& [id, job] : core.state().jobs()) {
      for (const std::string& member : job->members) {
        if (core.leases().Expired(id, member, lease)) {
          expired.emplace_back(id, member);
        }
      }
    }
    for (const auto& [job_id, member_id] : expired) {
      absl::Status status =
          core.RemoveMember(job_id, member_id,
                            absl::StrCat("lease expired (no heartbeat for ",
                                         absl::FormatDuration(lease), ")"));
      if (!status.ok()) {
        LogEvent(absl::StrCat("cannot remove member=", member_id,
                              " job=", job_id, ": ", status.message()));
      }
    }
    ExpireIdleJobs(core);
  });
  core_->costs().ExpireUnclaimed();
}

void MembershipService::ExpireIdleJobs(LockedCore& core) {
  const absl::Duration ttl = core_->options().idle_job_ttl;
  if (ttl <= absl::ZeroDuration()) return;
  std::vector<std::string> idle;
  for (const auto& [id, job] : core.state().jobs()) {
    if (core.leases().JobIdle(id, !job->members.empty(), ttl)) {
      idle.push_back(id);
    }
  }
  for (const std::string& job_id : idle) {
    absl::Status status = core.EraseJob(
        job_id, absl::StrCat("idle (no member and no call for ",
                             absl::FormatDuration(ttl), ", --idle-job-ttl)"));
    if (!status.ok()) {
      LogEvent(absl::StrCat("cannot delete idle job=", job_id, ": ",
                            status.message()));
      return;
    }
    ++idle_jobs_expired_;
  }
}

}  // namespace shard::server
