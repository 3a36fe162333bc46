#include "server/core/locked_core.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/plan/spec/job_spec.h"
#include "server/core/coordinator_core.h"
#include "server/runtime/event_log.h"

namespace shard::server {
namespace {

using shard::state::v1::StateUpdate;

// ABORTED for a generation that is not the job's formed one (or
// FAILED_PRECONDITION while none formed and the caller named none).
absl::Status CheckFormedGeneration(const JobState& job, uint64_t generation) {
  if (job.world_formed()) {
    if (generation == job.generation) return absl::OkStatus();
    return absl::AbortedError(
        absl::StrCat("generation ", generation, " of job \"", job.job_id,
                     "\" is stale; the current generation is ", job.generation,
                     ": re-join"));
  }
  if (generation == job.generation && generation > 0) {
    return absl::AbortedError(absl::StrCat(
        "generation ", generation, " of job \"", job.job_id,
        "\" ended (a member left or its lease expired): re-join to keep "
        "training; a member whose training is done can stop"));
  }
  if (generation != 0) {
    return absl::AbortedError(absl::StrCat(
        "generation ", generation, " of job \"", job.job_id,
        "\" is stale and the next world has not formed yet: re-join"));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "job \"", job.job_id, "\" has no formed world (", job.members.size(),
      " members joined); join and wait for the world first"));
}

}  // namespace

JobIncarnation IncarnationOf(const JobState& job) {
  return {job.job_id, job.incarnation};
}

WritePath& LockedCore::writes() const {
  core_.mu_.AssertHeld();
  return core_.writes_;
}

storage::StateStore& LockedCore::journal() const { return *core_.log_; }

uint64_t LockedCore::journaled() const { return writes().journaled(); }

LeaseTable& LockedCore::leases() {
  core_.mu_.AssertHeld();
  return core_.leases_;
}

const CoordinatorState& LockedCore::state() const { return writes().state(); }

absl::Status LockedCore::CheckServing() const {
  return writes().CheckServing();
}

absl::StatusOr<const JobState*> LockedCore::FindJob(const std::string& job_id) {
  const JobState* job = state().FindJob(job_id);
  if (job == nullptr) {
    return absl::NotFoundError(absl::StrCat("job \"", job_id,
                                            "\" does not exist; create it "
                                            "first or join with a spec"));
  }
  leases().TouchJob(job_id);
  return job;
}

absl::StatusOr<const JobState*> LockedCore::FindFormedJob(
    const std::string& job_id, uint64_t generation) {
  absl::StatusOr<const JobState*> job = FindJob(job_id);
  if (!job.ok()) return job.status();
  if (absl::Status s = (*job)->CheckNotFromEarlierJob(generation); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckFormedGeneration(**job, generation); !s.ok()) {
    return s;
  }
  return job;
}

absl::Status LockedCore::CheckStoreScope(const shard::v1::StoreScope& scope) {
  absl::StatusOr<const JobState*> job =
      FindFormedJob(scope.job_id(), scope.generation());
  if (!job.ok()) return job.status();
  if (absl::Status s = (*job)->CheckWorldMember(
          "the rendezvous store", scope.member_id(), scope.incarnation());
      !s.ok()) {
    return s;
  }
  if (scope.generation() <= core_.store_lost_through_) {
    return absl::AbortedError(absl::StrCat(
        "the rendezvous keys of generation ", scope.generation(), " of job ",
        scope.job_id(),
        " did not survive the coordinator's restart or failover (they live "
        "in memory); join again to form the process group in a new "
        "generation"));
  }
  return absl::OkStatus();
}

bool LockedCore::LostRendezvousOf(const JobState& job,
                                  const std::string& member_id) const {
  return job.world_formed() && job.generation <= core_.store_lost_through_ &&
         job.RankOf(member_id).has_value();
}

namespace {

// `requested` as it compares with the existing job's `stored` spec: the
// costs' sum is the job's (its costs are matched by their digest; a client
// that gives no sum, or a job created without one, is the same job); for
// a launch of an elastic job, a world size within its bounds names the
// launch's world (JobState::WorldSizeAwaited), not another job.
shard::v1::JobSpec AsComparedWith(const shard::v1::JobSpec& stored,
                                  const shard::v1::JobSpec& requested,
                                  LockedCore::SpecMatch match) {
  shard::v1::JobSpec compared = requested;
  if (stored.has_batches() && compared.has_batches()) {
    compared.mutable_batches()->set_costs_total(stored.batches().costs_total());
  }
  if (match == LockedCore::SpecMatch::kLaunch &&
      stored.min_world_size() < stored.max_world_size() &&
      stored.min_world_size() <= requested.world_size() &&
      requested.world_size() <= stored.max_world_size()) {
    compared.set_world_size(stored.world_size());
  }
  return compared;
}

}  // namespace

absl::StatusOr<const JobState*> LockedCore::CreateOrMatchJob(
    const std::string& job_id, const shard::v1::JobSpec& spec, SpecMatch match,
    absl::StatusCode conflict_code) {
  if (const JobState* existing = state().FindJob(job_id)) {
    if (const std::string difference = plan::JobSpecDifference(
            existing->spec, AsComparedWith(existing->spec, spec, match));
        !difference.empty()) {
      const std::string stored = plan::DescribeJobSpec(existing->spec);
      const std::string requested = plan::DescribeJobSpec(spec);
      return absl::Status(
          conflict_code,
          absl::StrCat("job \"", job_id, "\" exists with spec {", stored,
                       "}; the request asks for ",
                       requested == stored ? std::string("another")
                                           : absl::StrCat("{", requested, "}"),
                       " (the job's -> the request's: ", difference, ")"));
    }
    return existing;
  }
  if (absl::Status s = CheckTenantJobs(job_id); !s.ok()) return s;
  StateUpdate update;
  update.mutable_job_created()->set_job_id(job_id);
  *update.mutable_job_created()->mutable_spec() = spec;
  if (absl::Status s = writes().Persist(update); !s.ok()) return s;
  LogEvent(absl::StrCat("job created job=", job_id, " ",
                        plan::DescribeJobSpec(spec)));
  const JobState* created = state().FindJob(job_id);
  if (spec.has_batches()) core_.costs_.Claim(spec.batches().costs_sha256());
  // Its trainers are about to join: have epoch 0 ready when they stream.
  core_.orders_.Prepare(IncarnationOf(*created), created->spec, 0);
  core_.mu_.AssertHeld();
  if (core_.on_job_created_) core_.on_job_created_(*this, *created);
  return created;
}

std::shared_ptr<const TenantLimits> LockedCore::TenantOf(
    absl::string_view job_id) const {
  const TenantLimitsOf& tenant_of = core_.options_.tenant_limits_of;
  return tenant_of ? tenant_of(job_id) : nullptr;
}

absl::Status LockedCore::CheckTenantJobs(absl::string_view job_id) const {
  const std::shared_ptr<const TenantLimits> tenant = TenantOf(job_id);
  if (tenant == nullptr || !tenant->max_jobs) return absl::OkStatus();
  uint64_t jobs = 0;
  tenant->jobs.ForEachMatch(state().jobs(), [&](const auto&) { ++jobs; });
  return CheckTenantQuota(tenant.get(), &TenantLimits::max_jobs, "jobs", jobs,
                          1);
}

absl::Status LockedCore::CheckTenantRanks(absl::string_view job_id) const {
  const std::shared_ptr<const TenantLimits> tenant = TenantOf(job_id);
  if (tenant == nullptr || !tenant->max_ranks) return absl::OkStatus();
  uint64_t ranks = 0;
  tenant->jobs.ForEachMatch(state().jobs(), [&](const auto& entry) {
    ranks += entry.second->members.size();
  });
  return CheckTenantQuota(tenant.get(), &TenantLimits::max_ranks, "ranks",
                          ranks, 1);
}

absl::Status LockedCore::EraseJob(const std::string& job_id,
                                  absl::string_view reason) {
  const JobState* job = state().FindJob(job_id);
  const uint64_t incarnation = job->incarnation;
  const std::string costs =
      job->spec.has_batches() ? job->spec.batches().costs_sha256() : "";
  StateUpdate update;
  update.mutable_job_deleted()->set_job_id(job_id);
  if (absl::Status s = writes().Persist(update); !s.ok()) return s;
  if (!costs.empty()) core_.costs_.Unclaim(costs);
  leases().ForgetJob(job_id);
  core_.rendezvous_.EndJob(job_id, then_);
  core_.orders_.Forget(incarnation);
  core_.parked_.Wake(job_id, then_);
  LogEvent(absl::StrCat("job ", job_id, " deleted reason=", reason));
  return absl::OkStatus();
}

absl::Status LockedCore::JoinMember(const std::string& job_id,
                                    const std::string& member_id,
                                    uint64_t incarnation,
                                    std::optional<uint32_t> requested_rank,
                                    uint32_t launch_world_size) {
  const uint64_t known = state().FindJob(job_id)->IncarnationOf(member_id);
  if (incarnation != 0 && known != 0 && known != incarnation) {
    if (absl::Status s =
            RemoveMember(job_id, member_id, "restarted (new incarnation)");
        !s.ok()) {
      return s;
    }
  }
  const JobState* job = state().FindJob(job_id);
  if (!job->IsMember(member_id)) {
    if (absl::Status s = CheckTenantRanks(job_id); !s.ok()) return s;
  }
  if (!job->IsMember(member_id) || job->AwaitsRejoin(member_id)) {
    // CoordinatorState::Check refuses a member past max_world_size.
    StateUpdate update;
    auto* joined = update.mutable_member_joined();
    joined->set_job_id(job_id);
    joined->set_member_id(member_id);
    joined->set_incarnation(incarnation);
    if (requested_rank) joined->set_requested_rank(*requested_rank);
    joined->set_launch_world_size(launch_world_size);
    if (absl::Status s = writes().Persist(update); !s.ok()) return s;
    job = state().FindJob(job_id);
    LogEvent(absl::StrCat(
        "member joined job=", job_id, " member=", member_id,
        " members=", job->members.size(), "/",
        job->world_formed() ? job->world_size() : job->WorldSizeAwaited()));
  }
  // Also for a repeated join: a crash between journaling a membership change
  // and the GenerationFormed it allows must not leave the world unformed.
  // A member of a world whose rendezvous keys were lost joins again to form
  // its process group: the world is renewed, so every member forms its
  // group afresh in the next generation (the others learn it by ABORTED).
  if (absl::Status s = MaybeFormWorld(job_id, LostRendezvousOf(*job, member_id)
                                                  ? FormedWorld::kRenew
                                                  : FormedWorld::kKeep);
      !s.ok()) {
    return s;
  }
  leases().Renew(job_id, member_id);
  return absl::OkStatus();
}

absl::Status LockedCore::RemoveMember(const std::string& job_id,
                                      const std::string& member_id,
                                      absl::string_view reason) {
  const JobState* job = state().FindJob(job_id);
  if (job == nullptr || !job->IsMember(member_id)) return absl::OkStatus();
  const bool ends_generation = job->RankOf(member_id).has_value();
  const uint64_t generation = job->generation;
  StateUpdate update;
  update.mutable_member_removed()->set_job_id(job_id);
  update.mutable_member_removed()->set_member_id(member_id);
  if (absl::Status s = writes().Persist(update); !s.ok()) return s;
  leases().Forget(job_id, member_id);
  LogEvent(absl::StrCat(
      "member removed job=", job_id, " member=", member_id, " reason=", reason,
      ends_generation ? absl::StrCat(" generation=", generation, " ended")
                      : ""));
  if (ends_generation) {
    core_.rendezvous_.EndGeneration({job_id, generation}, then_);
  }
  core_.parked_.Wake(job_id, then_);
  return MaybeFormWorld(job_id, FormedWorld::kKeep);
}

absl::Status LockedCore::MaybeFormWorld(const std::string& job_id,
                                        FormedWorld formed_world) {
  const JobState* job = state().FindJob(job_id);
  // Members awaiting re-join do not count, and no world forms while one
  // does: a world formed with them could include a process that is gone (a
  // launcher restarted it), ended as soon as its replacement joins; one
  // formed without them would leave out survivors that re-join a moment
  // later. Each re-joins on ABORTED, or its lease runs out.
  const size_t eligible = job->members.size() - job->awaiting_rejoin.size();
  const size_t size = std::min<size_t>(eligible, job->spec.max_world_size());
  if (!job->world_formed()) {
    if (!job->awaiting_rejoin.empty() || eligible < job->WorldSizeAwaited()) {
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
  formed->set_world_size(static_cast<uint32_t>(size));
  formed->set_epoch(job->committed_epoch);
  formed->set_base_position(job->committed_position);
  if (absl::Status s = writes().Persist(update); !s.ok()) return s;
  if (replaces_world) {
    core_.rendezvous_.EndGeneration({job_id, replaced_generation}, then_);
  }
  core_.rendezvous_.OpenGeneration({job_id, formed->generation()});
  core_.parked_.Wake(job_id, then_);
  LogEvent(absl::StrCat("generation formed job=", job_id,
                        " generation=", formed->generation(),
                        " world_size=", size, " epoch=", formed->epoch(),
                        " base_position=", formed->base_position()));
  return absl::OkStatus();
}

absl::Status LockedCore::RecordProgress(const std::string& job_id,
                                        uint64_t epoch, uint64_t position) {
  const JobState* job = state().FindJob(job_id);
  const uint64_t stored_epoch = job->committed_epoch;
  const uint64_t generation = job->generation;
  if (std::make_pair(epoch, position) ==
      std::make_pair(stored_epoch, job->committed_position)) {
    return absl::OkStatus();
  }
  StateUpdate update;
  update.mutable_progress_committed()->set_job_id(job_id);
  update.mutable_progress_committed()->set_epoch(epoch);
  update.mutable_progress_committed()->set_position(position);
  if (absl::Status s = writes().Persist(update); !s.ok()) return s;
  LogEvent(absl::StrCat("progress committed job=", job_id, " generation=",
                        generation, " epoch=", epoch, " position=", position));
  // No rank resumes before the committed epoch: release older orders (and
  // prepare the next one).
  if (epoch > stored_epoch) {
    job = state().FindJob(job_id);
    core_.orders_.ReleaseBefore(IncarnationOf(*job), job->spec, epoch);
  }
  return absl::OkStatus();
}

void LockedCore::Park(const std::string& job_id, absl::Time deadline,
                      Decision decision,
                      const std::shared_ptr<Cancellation>& cancellation) {
  core_.mu_.AssertHeld();
  core_.parked_.Park(
      job_id, deadline,
      [core = &core_, decision = std::move(decision)](
          ParkedCalls::Why why, AfterUnlock& then) mutable {
        LockedCore locked(*core, then);
        return decision(locked, why);
      },
      cancellation, then_);
}

}  // namespace shard::server
