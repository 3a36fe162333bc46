// CoordinatorService: leases, leaving, and forming generations (elastic
// re-sharding from the committed position).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/plan/job_spec.h"
#include "server/coordinator_service.h"
#include "server/event_log.h"

namespace shard::server {

using shard::state::v1::StateUpdate;

void CoordinatorService::LeaseLoop() {
  const absl::Duration tick = options_.lease / 4;
  absl::Time due = options_.now() + tick;
  absl::MutexLock lock(&mu_);
  auto stopping = [this]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
  while (!mu_.AwaitWithTimeout(absl::Condition(&stopping), tick)) {
    mu_.Unlock();
    // Waking up later than due means this process could not run (a stall,
    // a pause of the machine): no member could reach it meanwhile.
    ExpireLeases(std::max(absl::ZeroDuration(), options_.now() - due));
    due = options_.now() + tick;
    mu_.Lock();
  }
}

void CoordinatorService::ExpireLeases(absl::Duration stalled) {
  absl::MutexLock lock(&mu_);
  if (!CheckServing().ok()) return;
  leases_.AddStall(stalled);
  std::vector<std::pair<std::string, std::string>> expired;
  for (const auto& [id, job] : state().jobs()) {
    for (const std::string& member : job.members) {
      if (leases_.Expired(id, member, options_.lease)) {
        expired.emplace_back(id, member);
      }
    }
  }
  for (const auto& [job_id, member_id] : expired) {
    absl::Status status =
        RemoveMember(job_id, member_id,
                     absl::StrCat("lease expired (no heartbeat for ",
                                  absl::FormatDuration(options_.lease), ")"));
    if (!status.ok()) {
      LogEvent(absl::StrCat("cannot remove member=", member_id, " job=", job_id,
                            ": ", status.message()));
    }
  }
  ExpireIdleJobs();
}

void CoordinatorService::ExpireIdleJobs() {
  if (options_.idle_job_ttl <= absl::ZeroDuration()) return;
  std::vector<std::string> idle;
  for (const auto& [id, job] : state().jobs()) {
    if (leases_.JobIdle(id, !job.members.empty(), options_.idle_job_ttl)) {
      idle.push_back(id);
    }
  }
  for (const std::string& job_id : idle) {
    absl::Status status = EraseJob(
        job_id, absl::StrCat("idle (no member and no call for ",
                             absl::FormatDuration(options_.idle_job_ttl),
                             ", --idle-job-ttl)"));
    if (!status.ok()) {
      LogEvent(absl::StrCat("cannot delete idle job=", job_id, ": ",
                            status.message()));
      return;
    }
    ++idle_jobs_expired_;
  }
}

uint64_t CoordinatorService::idle_jobs_expired() const {
  absl::MutexLock lock(&mu_);
  return idle_jobs_expired_;
}

absl::Status CoordinatorService::RemoveMember(const std::string& job_id,
                                              const std::string& member_id,
                                              absl::string_view reason) {
  const JobState* job = state().FindJob(job_id);
  if (job == nullptr || !job->IsMember(member_id)) return absl::OkStatus();
  const bool ends_generation = job->RankOf(member_id).has_value();
  const uint64_t generation = job->generation;
  StateUpdate update;
  update.mutable_member_removed()->set_job_id(job_id);
  update.mutable_member_removed()->set_member_id(member_id);
  if (absl::Status s = writes_.Persist(update); !s.ok()) return s;
  leases_.Forget(job_id, member_id);
  LogEvent(absl::StrCat(
      "member removed job=", job_id, " member=", member_id, " reason=", reason,
      ends_generation ? absl::StrCat(" generation=", generation, " ended")
                      : ""));
  if (ends_generation) rendezvous_.EndGeneration({job_id, generation});
  parked_.Wake(job_id);
  return MaybeFormWorld(job_id, FormedWorld::kKeep);
}

absl::Status CoordinatorService::MaybeFormWorld(const std::string& job_id,
                                                FormedWorld formed_world) {
  const JobState* job = state().FindJob(job_id);
  const shard::v1::JobSpec& spec = job->spec;
  // Members awaiting re-join do not count, and no world forms while one
  // does: a world formed with them could include a process that is gone (a
  // launcher restarted it), ended as soon as its replacement joins; one
  // formed without them would leave out survivors that re-join a moment
  // later. Each re-joins on ABORTED, or its lease runs out.
  const size_t eligible = job->members.size() - job->awaiting_rejoin.size();
  const size_t size = std::min<size_t>(eligible, spec.max_world_size());
  if (!job->world_formed()) {
    const size_t needed =
        job->generation == 0 ? spec.world_size() : spec.min_world_size();
    if (!job->awaiting_rejoin.empty() || eligible < needed) {
      return absl::OkStatus();
    }
  } else if (formed_world == FormedWorld::kKeep ||
             (formed_world == FormedWorld::kGrow &&
              size <= job->world.size())) {
    return absl::OkStatus();
  }
  // A world growing at a commit, or renewed, replaces the formed one.
  const bool replaces_world = job->world_formed();
  const uint64_t replaced_generation = job->generation;
  StateUpdate update;
  auto* formed = update.mutable_generation_formed();
  formed->set_job_id(job_id);
  // Coordinator-wide numbering: never a number an earlier job of this id
  // (or any job) had.
  formed->set_generation(state().last_generation() + 1);
  for (std::string& member : job->NextWorld(size)) {
    formed->add_members(std::move(member));
  }
  formed->set_epoch(job->committed_epoch);
  formed->set_base_position(job->committed_position);
  if (absl::Status s = writes_.Persist(update); !s.ok()) return s;
  if (replaces_world) rendezvous_.EndGeneration({job_id, replaced_generation});
  rendezvous_.OpenGeneration({job_id, formed->generation()});
  parked_.Wake(job_id);
  LogEvent(absl::StrCat("generation formed job=", job_id,
                        " generation=", formed->generation(),
                        " world_size=", size, " epoch=", formed->epoch(),
                        " base_position=", formed->base_position()));
  return absl::OkStatus();
}

absl::StatusOr<plan::ShardLayout> CoordinatorService::LayoutFor(
    const JobState& job, uint64_t epoch) const {
  if (epoch < job.generation_epoch) {
    return absl::FailedPreconditionError(absl::StrCat(
        "epoch ", epoch, " of job \"", job.job_id,
        "\" was complete before generation ", job.generation,
        " formed (it starts at epoch ", job.generation_epoch, ")"));
  }
  return plan::LayoutOf(
      job.spec, job.world_size(),
      epoch == job.generation_epoch ? job.generation_base : 0);
}

absl::Status CoordinatorService::CheckCurrentIncarnation(
    const JobState& job, const std::string& member_id, uint64_t incarnation) {
  const uint64_t current = job.IncarnationOf(member_id);
  if (incarnation == 0 || current == 0 || incarnation == current) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      absl::StrCat("member \"", member_id, "\" of job \"", job.job_id,
                   "\" was re-joined by a restarted process (incarnation ",
                   current, "); this process (incarnation ", incarnation,
                   ") is stale and must stop"));
}

absl::StatusOr<shard::v1::HeartbeatResponse> CoordinatorService::Heartbeat(
    const shard::v1::HeartbeatRequest& request) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) return s;
  if (absl::Status s = plan::ValidateMemberId(request.member_id()); !s.ok()) {
    return s;
  }
  absl::MutexLock lock(&mu_);
  if (absl::Status s = CheckServing(); !s.ok()) return s;
  absl::StatusOr<const JobState*> job = FindJob(request.job_id());
  if (!job.ok()) return job.status();
  // A process of a deleted job must not keep a same-named member of the
  // re-created job alive.
  if (absl::Status s = CheckNotFromEarlierJob(**job, request.generation());
      !s.ok()) {
    return s;
  }
  if (!(*job)->IsMember(request.member_id())) {
    return absl::AbortedError(absl::StrCat(
        "member \"", request.member_id(), "\" is not part of job \"",
        request.job_id(), "\" (it left or its lease expired): re-join"));
  }
  if (absl::Status s = CheckCurrentIncarnation(**job, request.member_id(),
                                               request.incarnation());
      !s.ok()) {
    return s;
  }
  leases_.Renew(request.job_id(), request.member_id());
  absl::StatusOr<const JobState*> formed =
      FindFormedJob(request.job_id(), request.generation());
  if (!formed.ok()) return formed.status();
  shard::v1::HeartbeatResponse response;
  response.set_generation((*formed)->generation);
  return response;
}

void CoordinatorService::StartLeave(const shard::v1::LeaveRequest& request,
                                    Reply<shard::v1::LeaveResponse> reply) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) {
    return std::move(reply)(s);
  }
  if (absl::Status s = plan::ValidateMemberId(request.member_id()); !s.ok()) {
    return std::move(reply)(s);
  }
  Mutate<shard::v1::LeaveResponse>(
      std::move(reply),
      [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(
          mu_) -> absl::StatusOr<shard::v1::LeaveResponse> {
        absl::StatusOr<const JobState*> job = FindJob(request.job_id());
        if (!job.ok()) return job.status();
        if (absl::Status s = CheckCurrentIncarnation(**job, request.member_id(),
                                                     request.incarnation());
            !s.ok()) {
          return s;
        }
        if (absl::Status s =
                RemoveMember(request.job_id(), request.member_id(), "left");
            !s.ok()) {
          return s;
        }
        return shard::v1::LeaveResponse();
      });
}

}  // namespace shard::server
