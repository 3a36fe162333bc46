#include "server/services/job_service.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/plan/layouts/shard_layout.h"
#include "common/plan/spec/job_spec.h"

namespace shard::server {

namespace {

shard::v1::Job::AwaitedBy AwaitedByView(JobState::AwaitedBy by) {
  switch (by) {
    case JobState::AwaitedBy::kSpecWorldSize:
      return shard::v1::Job::AWAITED_BY_SPEC_WORLD_SIZE;
    case JobState::AwaitedBy::kLaunchSize:
      return shard::v1::Job::AWAITED_BY_LAUNCH_SIZE;
    case JobState::AwaitedBy::kMinWorldSize:
      return shard::v1::Job::AWAITED_BY_MIN_WORLD_SIZE;
  }
  return shard::v1::Job::AWAITED_BY_UNSPECIFIED;
}

}  // namespace

shard::v1::Job JobView(const JobState& job) {
  shard::v1::Job view;
  view.set_job_id(job.job_id);
  view.set_incarnation(job.incarnation);
  *view.mutable_spec() = job.spec;
  view.set_generation(job.generation);
  view.set_joined_members(static_cast<uint32_t>(job.members.size()));
  view.set_samples_per_rank(plan::LayoutOf(job.spec).RankShardSize(0));
  for (uint64_t count : plan::SourceCounts(job.spec)) {
    view.add_source_counts(count);
  }
  view.set_committed_epoch(job.committed_epoch);
  view.set_committed_position(job.committed_position);
  view.set_current_world_size(job.world_size());
  if (!job.world_formed()) {
    view.set_world_size_awaited(job.WorldSizeAwaited());
    view.set_world_size_awaited_by(AwaitedByView(job.WorldSizeAwaitedBy()));
  }
  for (const std::string& member_id : job.members) {
    shard::v1::JobMember* member = view.add_members();
    member->set_member_id(member_id);
    if (std::optional<uint32_t> rank = job.RankOf(member_id)) {
      member->set_in_world(true);
      member->set_rank(*rank);
    }
    member->set_awaiting_rejoin(job.AwaitsRejoin(member_id));
  }
  return view;
}

void JobService::StartCreateJob(const shard::v1::CreateJobRequest& request,
                                Reply<shard::v1::Job> reply) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) {
    return std::move(reply)(s);
  }
  absl::StatusOr<shard::v1::JobSpec> spec =
      plan::NormalizeJobSpec(request.spec(), core_->options().max_order_bytes);
  if (!spec.ok()) return std::move(reply)(spec.status());
  // After a restart the costs are read back first (off this thread).
  core_->costs().WhenCostsOfChecked(
      *spec, [this, job_id = request.job_id(), spec = *spec,
              reply = std::move(reply)](absl::Status costs) mutable {
        if (!costs.ok()) return std::move(reply)(costs);
        core_->Mutate<shard::v1::Job>(
            std::move(reply),
            [&](LockedCore& core) -> absl::StatusOr<shard::v1::Job> {
              absl::StatusOr<const JobState*> job = core.CreateOrMatchJob(
                  job_id, spec, LockedCore::SpecMatch::kExact,
                  absl::StatusCode::kAlreadyExists);
              if (!job.ok()) return job.status();
              return JobView(**job);
            });
      });
}

void JobService::StartDeleteJob(const shard::v1::DeleteJobRequest& request,
                                Reply<shard::v1::DeleteJobResponse> reply) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) {
    return std::move(reply)(s);
  }
  core_->Mutate<shard::v1::DeleteJobResponse>(
      std::move(reply),
      [&](LockedCore& core) -> absl::StatusOr<shard::v1::DeleteJobResponse> {
        absl::StatusOr<const JobState*> job = core.FindJob(request.job_id());
        if (!job.ok()) return job.status();
        if (!(*job)->members.empty() && !request.force()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "job \"", request.job_id(), "\" has ", (*job)->members.size(),
              " joined members; stop them first or delete with force"));
        }
        if (absl::Status s = core.EraseJob(request.job_id(), "DeleteJob");
            !s.ok()) {
          return s;
        }
        return shard::v1::DeleteJobResponse();
      });
}

absl::StatusOr<shard::v1::Job> JobService::GetJob(
    const shard::v1::GetJobRequest& request) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) return s;
  return core_->Read<shard::v1::Job>(
      [&](LockedCore& core) -> absl::StatusOr<shard::v1::Job> {
        absl::StatusOr<const JobState*> job = core.FindJob(request.job_id());
        if (!job.ok()) return job.status();
        return JobView(**job);
      });
}

absl::StatusOr<shard::v1::ListJobsResponse> JobService::ListJobs(
    const shard::v1::ListJobsRequest&) {
  return core_->Read<shard::v1::ListJobsResponse>(
      [](LockedCore& core) -> absl::StatusOr<shard::v1::ListJobsResponse> {
        shard::v1::ListJobsResponse response;
        for (const auto& [id, job] : core.state().jobs()) {
          *response.add_jobs() = JobView(*job);
        }
        return response;
      });
}

absl::StatusOr<shard::v1::PutCostsResponse> JobService::PutCosts(
    const shard::v1::PutCostsRequest& request,
    std::shared_ptr<const TenantLimits> uploader) {
  return core_->costs().Put(request, std::move(uploader));
}

}  // namespace shard::server
