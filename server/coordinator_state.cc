#include "server/coordinator_state.h"

#include "absl/base/internal/raw_logging.h"

namespace shard::server {

std::optional<uint32_t> JobState::RankOf(absl::string_view member_id) const {
  for (size_t rank = 0; rank < members.size(); ++rank) {
    if (members[rank] == member_id) return static_cast<uint32_t>(rank);
  }
  return std::nullopt;
}

void CoordinatorState::Apply(const shard::state::v1::StateUpdate& update) {
  switch (update.update_case()) {
    case shard::state::v1::StateUpdate::kJobCreated:
      ApplyJobCreated(update.job_created());
      return;
    case shard::state::v1::StateUpdate::kMemberJoined:
      ApplyMemberJoined(update.member_joined());
      return;
    case shard::state::v1::StateUpdate::kProgressCommitted:
      ApplyProgressCommitted(update.progress_committed());
      return;
    case shard::state::v1::StateUpdate::UPDATE_NOT_SET:
      break;
  }
  ABSL_RAW_LOG(FATAL, "CoordinatorState::Apply: empty update");
}

shard::state::v1::StateSnapshot CoordinatorState::ToSnapshot(
    uint64_t sequence) const {
  shard::state::v1::StateSnapshot snapshot;
  snapshot.set_sequence(sequence);
  for (const auto& [id, job] : jobs_) {
    shard::state::v1::JobRecord* record = snapshot.add_jobs();
    record->set_job_id(id);
    *record->mutable_spec() = job.spec;
    record->set_generation(job.generation);
    for (const std::string& member : job.members) record->add_members(member);
    record->set_committed_epoch(job.committed_epoch);
    record->set_committed_position(job.committed_position);
  }
  return snapshot;
}

CoordinatorState CoordinatorState::FromSnapshot(
    const shard::state::v1::StateSnapshot& snapshot) {
  CoordinatorState state;
  for (const shard::state::v1::JobRecord& record : snapshot.jobs()) {
    JobState& job = state.jobs_[record.job_id()];
    job.job_id = record.job_id();
    job.spec = record.spec();
    job.generation = record.generation();
    job.members.assign(record.members().begin(), record.members().end());
    job.committed_epoch = record.committed_epoch();
    job.committed_position = record.committed_position();
  }
  return state;
}

const JobState* CoordinatorState::FindJob(absl::string_view job_id) const {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : &it->second;
}

void CoordinatorState::ApplyJobCreated(
    const shard::state::v1::JobCreated& update) {
  auto [it, inserted] = jobs_.try_emplace(update.job_id());
  ABSL_RAW_CHECK(inserted, "JobCreated for an existing job");
  it->second.job_id = update.job_id();
  it->second.spec = update.spec();
}

void CoordinatorState::ApplyMemberJoined(
    const shard::state::v1::MemberJoined& update) {
  auto it = jobs_.find(update.job_id());
  ABSL_RAW_CHECK(it != jobs_.end(), "MemberJoined for an unknown job");
  JobState& job = it->second;
  ABSL_RAW_CHECK(update.rank() == job.members.size() && !job.world_formed(),
                 "MemberJoined with a rank that is not the next free one");
  job.members.push_back(update.member_id());
  if (job.world_formed()) ++job.generation;
}

void CoordinatorState::ApplyProgressCommitted(
    const shard::state::v1::ProgressCommitted& update) {
  auto it = jobs_.find(update.job_id());
  ABSL_RAW_CHECK(it != jobs_.end(), "ProgressCommitted for an unknown job");
  it->second.committed_epoch = update.epoch();
  it->second.committed_position = update.position();
}

}  // namespace shard::server
