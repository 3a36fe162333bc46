#include "server/coordinator_state.h"

#include <algorithm>

#include "absl/base/internal/raw_logging.h"

namespace shard::server {

bool JobState::IsMember(absl::string_view member_id) const {
  return std::find(members.begin(), members.end(), member_id) != members.end();
}

std::optional<uint32_t> JobState::RankOf(absl::string_view member_id) const {
  for (size_t rank = 0; rank < world.size(); ++rank) {
    if (world[rank] == member_id) return static_cast<uint32_t>(rank);
  }
  return std::nullopt;
}

JobState& CoordinatorState::MustFind(const std::string& job_id,
                                     const char* update) {
  auto it = jobs_.find(job_id);
  if (it == jobs_.end()) {
    ABSL_RAW_LOG(FATAL, "%s for an unknown job", update);
  }
  return it->second;
}

void CoordinatorState::Apply(const shard::state::v1::StateUpdate& update) {
  using shard::state::v1::StateUpdate;
  switch (update.update_case()) {
    case StateUpdate::kJobCreated: {
      const auto& created = update.job_created();
      auto [it, inserted] = jobs_.try_emplace(created.job_id());
      ABSL_RAW_CHECK(inserted, "JobCreated for an existing job");
      it->second.job_id = created.job_id();
      it->second.spec = created.spec();
      return;
    }
    case StateUpdate::kMemberJoined: {
      JobState& job = MustFind(update.member_joined().job_id(), "MemberJoined");
      ABSL_RAW_CHECK(!job.IsMember(update.member_joined().member_id()),
                     "MemberJoined for a member that already joined");
      job.members.push_back(update.member_joined().member_id());
      return;
    }
    case StateUpdate::kMemberRemoved: {
      JobState& job =
          MustFind(update.member_removed().job_id(), "MemberRemoved");
      const std::string& member = update.member_removed().member_id();
      ABSL_RAW_CHECK(job.IsMember(member), "MemberRemoved for a non-member");
      job.members.erase(
          std::find(job.members.begin(), job.members.end(), member));
      if (job.RankOf(member)) job.world.clear();
      return;
    }
    case StateUpdate::kGenerationFormed: {
      const auto& formed = update.generation_formed();
      JobState& job = MustFind(formed.job_id(), "GenerationFormed");
      ABSL_RAW_CHECK(formed.generation() > job.generation,
                     "GenerationFormed does not advance the generation");
      job.world.assign(formed.members().begin(), formed.members().end());
      job.generation = formed.generation();
      job.generation_epoch = formed.epoch();
      job.generation_base = formed.base_position();
      return;
    }
    case StateUpdate::kProgressCommitted: {
      JobState& job =
          MustFind(update.progress_committed().job_id(), "ProgressCommitted");
      job.committed_epoch = update.progress_committed().epoch();
      job.committed_position = update.progress_committed().position();
      return;
    }
    case StateUpdate::kJobDeleted: {
      const std::string& job_id = update.job_deleted().job_id();
      ABSL_RAW_CHECK(jobs_.erase(job_id) == 1, "JobDeleted for an unknown job");
      return;
    }
    case StateUpdate::UPDATE_NOT_SET:
      break;
  }
  ABSL_RAW_LOG(FATAL, "CoordinatorState::Apply: empty update");
}

const JobState* CoordinatorState::FindJob(absl::string_view job_id) const {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : &it->second;
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
    for (const std::string& member : job.world) record->add_world(member);
    record->set_generation_epoch(job.generation_epoch);
    record->set_generation_base(job.generation_base);
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
    job.world.assign(record.world().begin(), record.world().end());
    job.generation_epoch = record.generation_epoch();
    job.generation_base = record.generation_base();
    job.committed_epoch = record.committed_epoch();
    job.committed_position = record.committed_position();
  }
  return state;
}

}  // namespace shard::server
