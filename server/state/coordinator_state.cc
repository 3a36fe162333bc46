#include "server/state/coordinator_state.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/plan/spec/job_spec.h"
#include "server/state/job_record.h"
#include "server/state/state_rules.h"

namespace shard::server {
namespace {

using shard::state::v1::StateUpdate;

// The job a (checked) update is about.
absl::string_view JobIdOf(const StateUpdate& update) {
  switch (update.update_case()) {
    case StateUpdate::kJobCreated:
      return update.job_created().job_id();
    case StateUpdate::kMemberJoined:
      return update.member_joined().job_id();
    case StateUpdate::kMemberRemoved:
      return update.member_removed().job_id();
    case StateUpdate::kGenerationFormed:
      return update.generation_formed().job_id();
    case StateUpdate::kProgressCommitted:
      return update.progress_committed().job_id();
    case StateUpdate::kJobDeleted:
      return update.job_deleted().job_id();
    case StateUpdate::UPDATE_NOT_SET:
      break;
  }
  return "";
}

// The world `formed` names, by rank: its members, or (world_size set)
// the job's next world of that size. FAILED_PRECONDITION when it names
// none or more members than may form one.
absl::StatusOr<std::vector<std::string>> WorldFormed(
    const JobState& job, const shard::state::v1::GenerationFormed& formed) {
  if (formed.world_size() == 0) {
    if (formed.members().empty())
      return Unfit("GenerationFormed names no world");
    return std::vector<std::string>(formed.members().begin(),
                                    formed.members().end());
  }
  if (!formed.members().empty()) {
    return Unfit("GenerationFormed gives both members and a world size");
  }
  const size_t eligible = job.members.size() - job.awaiting_rejoin.size();
  if (formed.world_size() > eligible) {
    return Unfit(absl::StrCat("GenerationFormed of ", formed.world_size(),
                              " members while ", eligible, " may form one"));
  }
  return job.NextWorld(formed.world_size());
}

}  // namespace

absl::StatusOr<const JobState*> CoordinatorState::CheckedJob(
    absl::string_view job_id, absl::string_view update) const {
  const JobState* job = FindJob(job_id);
  if (job == nullptr) {
    return Unfit(absl::StrCat(update, " for job \"", job_id,
                              "\", which does not exist"));
  }
  return job;
}

absl::Status CoordinatorState::Check(const StateUpdate& update) const {
  switch (update.update_case()) {
    case StateUpdate::kJobCreated:
      return CheckJobCreated(update.job_created());
    case StateUpdate::kMemberJoined:
      return CheckMemberJoined(update.member_joined());
    case StateUpdate::kMemberRemoved:
      return CheckMemberRemoved(update.member_removed());
    case StateUpdate::kGenerationFormed:
      return CheckGenerationFormed(update.generation_formed());
    case StateUpdate::kProgressCommitted:
      return CheckProgressCommitted(update.progress_committed());
    case StateUpdate::kJobDeleted:
      return CheckedJob(update.job_deleted().job_id(), "JobDeleted").status();
    case StateUpdate::UPDATE_NOT_SET:
      break;
  }
  if (!update.GetReflection()->GetUnknownFields(update).empty()) {
    return Unfit(
        "update of an unknown type (written by a newer shardd? run the "
        "version that wrote this data directory)");
  }
  return Unfit("empty update");
}

absl::Status CoordinatorState::CheckJobCreated(
    const shard::state::v1::JobCreated& created) const {
  if (absl::Status s = plan::ValidateJobId(created.job_id()); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckNormalSpec(created.spec()); !s.ok()) return s;
  if (FindJob(created.job_id()) != nullptr) {
    return Unfit(absl::StrCat("JobCreated for job \"", created.job_id(),
                              "\", which already exists"));
  }
  return absl::OkStatus();
}

absl::Status CoordinatorState::CheckMemberJoined(
    const shard::state::v1::MemberJoined& joined) const {
  absl::StatusOr<const JobState*> job =
      CheckedJob(joined.job_id(), "MemberJoined");
  if (!job.ok()) return job.status();
  if (absl::Status s = plan::ValidateMemberId(joined.member_id()); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckLaunchWorldSize((*job)->spec, joined.member_id(),
                                            joined.launch_world_size());
      !s.ok()) {
    return s;
  }
  if ((*job)->IsMember(joined.member_id())) {
    // Joining again is an update only for a member awaiting re-join.
    if ((*job)->AwaitsRejoin(joined.member_id())) return absl::OkStatus();
    return Unfit(absl::StrCat("MemberJoined for \"", joined.member_id(),
                              "\", which already joined"));
  }
  if ((*job)->members.size() >= (*job)->spec.max_world_size()) {
    return Unfit(absl::StrCat("job \"", joined.job_id(), "\" already has its ",
                              (*job)->spec.max_world_size(),
                              " members; member \"", joined.member_id(),
                              "\" is not one of them"));
  }
  return absl::OkStatus();
}

absl::Status CoordinatorState::CheckMemberRemoved(
    const shard::state::v1::MemberRemoved& removed) const {
  absl::StatusOr<const JobState*> job =
      CheckedJob(removed.job_id(), "MemberRemoved");
  if (!job.ok()) return job.status();
  if (!(*job)->IsMember(removed.member_id())) {
    return Unfit(absl::StrCat("MemberRemoved for \"", removed.member_id(),
                              "\", which is not a member"));
  }
  return absl::OkStatus();
}

absl::Status CoordinatorState::CheckGenerationFormed(
    const shard::state::v1::GenerationFormed& formed) const {
  absl::StatusOr<const JobState*> job =
      CheckedJob(formed.job_id(), "GenerationFormed");
  if (!job.ok()) return job.status();
  const JobState& state = **job;
  if (formed.generation() <= last_generation_) {
    return Unfit(absl::StrCat(
        "GenerationFormed with generation ", formed.generation(),
        ", not above the last one given out (", last_generation_, ")"));
  }
  absl::StatusOr<std::vector<std::string>> world = WorldFormed(state, formed);
  if (!world.ok()) return world.status();
  if (absl::Status s = CheckWorld(state, *world); !s.ok()) return s;
  if (state.world_formed() && world->size() < state.world.size()) {
    return Unfit("GenerationFormed replaces a formed world by a smaller one");
  }
  if (formed.epoch() != state.committed_epoch ||
      formed.base_position() != state.committed_position) {
    return Unfit(absl::StrCat(
        "GenerationFormed starts at epoch ", formed.epoch(), " position ",
        formed.base_position(), ", not at the committed epoch ",
        state.committed_epoch, " position ", state.committed_position));
  }
  return absl::OkStatus();
}

absl::Status CoordinatorState::CheckProgressCommitted(
    const shard::state::v1::ProgressCommitted& committed) const {
  absl::StatusOr<const JobState*> job =
      CheckedJob(committed.job_id(), "ProgressCommitted");
  if (!job.ok()) return job.status();
  const JobState& state = **job;
  if (!state.world_formed()) {
    return Unfit("ProgressCommitted while no world is formed");
  }
  if (std::make_pair(committed.epoch(), committed.position()) <
      std::make_pair(state.committed_epoch, state.committed_position)) {
    return Unfit(absl::StrCat(
        "progress of job \"", committed.job_id(),
        "\" cannot go back from the committed epoch ", state.committed_epoch,
        " position ", state.committed_position, " to epoch ", committed.epoch(),
        " position ", committed.position()));
  }
  return CheckProgress(state, committed.epoch(), committed.position());
}

absl::Status CoordinatorState::Apply(const StateUpdate& update) {
  if (absl::Status s = Check(update); !s.ok()) return s;
  const absl::string_view job_id = JobIdOf(update);
  const auto counted = [&] {
    const JobState* job = FindJob(job_id);
    return job == nullptr ? 0 : job->RanksCounted();
  };
  ranks_held_ -= counted();
  ApplyChecked(update);
  ranks_held_ += counted();
  return absl::OkStatus();
}

void CoordinatorState::ApplyChecked(const StateUpdate& update) {
  switch (update.update_case()) {
    case StateUpdate::kJobCreated:
      ApplyJobCreated(update.job_created());
      break;
    case StateUpdate::kMemberJoined:
      ApplyMemberJoined(update.member_joined());
      break;
    case StateUpdate::kMemberRemoved:
      MutableJob(update.member_removed().job_id())
          .RemoveMember(update.member_removed().member_id());
      break;
    case StateUpdate::kGenerationFormed:
      ApplyGenerationFormed(update.generation_formed());
      break;
    case StateUpdate::kProgressCommitted:
      ApplyProgressCommitted(update.progress_committed());
      break;
    case StateUpdate::kJobDeleted:
      jobs_.erase(jobs_.find(update.job_deleted().job_id()));
      break;
    case StateUpdate::UPDATE_NOT_SET:
      break;  // Refused by Check.
  }
}

JobState& CoordinatorState::MutableJob(absl::string_view job_id) {
  std::shared_ptr<const JobState>& job = jobs_.find(job_id)->second;
  // Shared with a copy of the state (a snapshot being written): copy it
  // first. Only copies of this state share it, and they are made under the
  // owner's lock, so a count of 1 means nobody else can see it.
  if (job.use_count() != 1) job = std::make_shared<JobState>(*job);
  return const_cast<JobState&>(*job);
}

void CoordinatorState::ApplyJobCreated(
    const shard::state::v1::JobCreated& created) {
  auto job = std::make_shared<JobState>();
  job->job_id = created.job_id();
  job->spec = created.spec();
  job->incarnation = ++last_incarnation_;
  job->generation_floor = last_generation_;
  jobs_[created.job_id()] = std::move(job);
}

void CoordinatorState::ApplyMemberJoined(
    const shard::state::v1::MemberJoined& joined) {
  JobState& job = MutableJob(joined.job_id());
  const std::optional<uint32_t> requested_rank =
      joined.has_requested_rank()
          ? std::optional<uint32_t>(joined.requested_rank())
          : std::nullopt;
  if (job.IsMember(joined.member_id())) {
    job.Rejoin(joined.member_id(), requested_rank);
  } else {
    job.AddMember(joined.member_id(), joined.incarnation(), requested_rank,
                  joined.launch_world_size());
  }
}

void CoordinatorState::ApplyGenerationFormed(
    const shard::state::v1::GenerationFormed& formed) {
  JobState& job = MutableJob(formed.job_id());
  job.SetWorld(*WorldFormed(job, formed));  // Check found it.
  job.generation = formed.generation();
  job.StartGeneration(formed.epoch(), formed.base_position(), job.world_size());
  last_generation_ = formed.generation();
}

void CoordinatorState::ApplyProgressCommitted(
    const shard::state::v1::ProgressCommitted& committed) {
  JobState& job = MutableJob(committed.job_id());
  job.committed_epoch = committed.epoch();
  job.committed_position = committed.position();
}

const JobState* CoordinatorState::FindJob(absl::string_view job_id) const {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : it->second.get();
}

shard::state::v1::StateSnapshot CoordinatorState::ToSnapshot(
    uint64_t sequence) const {
  shard::state::v1::StateSnapshot snapshot;
  snapshot.set_sequence(sequence);
  snapshot.set_last_generation(last_generation_);
  snapshot.set_last_incarnation(last_incarnation_);
  for (const auto& [id, job] : jobs_) *snapshot.add_jobs() = JobRecordOf(*job);
  return snapshot;
}

absl::StatusOr<CoordinatorState> CoordinatorState::FromSnapshot(
    const shard::state::v1::StateSnapshot& snapshot) {
  CoordinatorState state;
  state.last_generation_ = snapshot.last_generation();
  state.last_incarnation_ = snapshot.last_incarnation();
  // Snapshots written before incarnations and coordinator-wide generations
  // carry neither counter: number their jobs in order and continue above
  // their highest generation.
  const bool before_incarnations = snapshot.last_incarnation() == 0;
  if (before_incarnations) {
    for (const shard::state::v1::JobRecord& record : snapshot.jobs()) {
      state.last_generation_ =
          std::max(state.last_generation_, record.generation());
    }
  }
  std::set<uint64_t> incarnations;
  for (const shard::state::v1::JobRecord& record : snapshot.jobs()) {
    auto in_job = [&record](const absl::Status& status) {
      return absl::FailedPreconditionError(
          absl::StrCat("job \"", record.job_id(), "\": ", status.message()));
    };
    if (absl::Status s = plan::ValidateJobId(record.job_id()); !s.ok()) {
      return in_job(s);
    }
    if (state.jobs_.count(record.job_id()) != 0) {
      return in_job(Unfit("listed twice"));
    }
    absl::StatusOr<JobState> job =
        JobFromRecord(record, before_incarnations ? ++state.last_incarnation_
                                                  : record.incarnation());
    if (!job.ok()) return in_job(job.status());
    if (job->incarnation == 0 || job->incarnation > state.last_incarnation_ ||
        !incarnations.insert(job->incarnation).second) {
      return in_job(Unfit(absl::StrCat("incarnation ", job->incarnation,
                                       " is zero, repeated or above the "
                                       "last one given out (",
                                       state.last_incarnation_, ")")));
    }
    if (job->generation > state.last_generation_ ||
        job->generation_floor > state.last_generation_) {
      return in_job(Unfit(absl::StrCat(
          "generation ", job->generation, " (floor ", job->generation_floor,
          ") does not fit the last generation given out (",
          state.last_generation_, ")")));
    }
    std::string job_id = job->job_id;
    state.ranks_held_ += job->RanksCounted();
    state.jobs_.emplace(std::move(job_id),
                        std::make_shared<JobState>(*std::move(job)));
  }
  return state;
}

}  // namespace shard::server
