#include "server/services/progress_service.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/plan/layouts/shard_layout.h"
#include "common/plan/spec/job_spec.h"

namespace shard::server {
namespace {

// The committed progress the request stands for, in the stored form: a
// complete epoch is the start of the next one. INVALID_ARGUMENT unless the
// position is a round boundary of `layout`.
absl::StatusOr<std::pair<uint64_t, uint64_t>> StoredProgress(
    const plan::ShardLayout& layout,
    const shard::v1::CommitProgressRequest& request) {
  if (!layout.IsRoundBoundary(request.position())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "position ", request.position(), " must be ", layout.base(),
        " plus a multiple of the world size ", layout.world_size(),
        " and at most the epoch length ", layout.total()));
  }
  if (request.position() == layout.total() &&
      request.epoch() < plan::kMaxEpoch) {
    return std::make_pair(request.epoch() + 1, uint64_t{0});
  }
  return std::make_pair(request.epoch(), request.position());
}

absl::StatusOr<shard::v1::CommitProgressResponse> Commit(
    LockedCore& core, const shard::v1::CommitProgressRequest& request) {
  const std::string& job_id = request.job_id();
  absl::StatusOr<const JobState*> job =
      core.FindFormedJob(job_id, request.generation());
  if (!job.ok()) return job.status();
  if (absl::Status s = (*job)->CheckWorldMember(
          "CommitProgress", request.member_id(), request.incarnation());
      !s.ok()) {
    return s;
  }
  absl::StatusOr<plan::ShardLayout> layout =
      (*job)->WorldLayout(request.epoch());
  if (!layout.ok()) return layout.status();
  absl::StatusOr<std::pair<uint64_t, uint64_t>> progress =
      StoredProgress(*layout, request);
  if (!progress.ok()) return progress.status();
  const auto [epoch, position] = *progress;
  if (absl::Status s = core.RecordProgress(job_id, epoch, position); !s.ok()) {
    return s;
  }
  // Members waiting to join an elastic job are admitted at commit points.
  if (absl::Status s =
          core.MaybeFormWorld(job_id, LockedCore::FormedWorld::kGrow);
      !s.ok()) {
    return s;
  }
  shard::v1::CommitProgressResponse response;
  response.set_committed_epoch(epoch);
  response.set_committed_position(position);
  response.set_generation(core.state().FindJob(job_id)->generation);
  return response;
}

}  // namespace

void ProgressService::StartCommitProgress(
    const shard::v1::CommitProgressRequest& request,
    Reply<shard::v1::CommitProgressResponse> reply) {
  if (absl::Status s = plan::ValidateJobId(request.job_id()); !s.ok()) {
    return std::move(reply)(s);
  }
  if (absl::Status s = plan::ValidateEpoch(request.epoch()); !s.ok()) {
    return std::move(reply)(s);
  }
  core_->Mutate<shard::v1::CommitProgressResponse>(
      std::move(reply),
      [&](LockedCore& core) { return Commit(core, request); });
}

}  // namespace shard::server
