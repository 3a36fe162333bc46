#include "server/state/coordinator_state.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/plan/job_spec.h"
#include "google/protobuf/util/message_differencer.h"

namespace shard::server {
namespace {

using shard::state::v1::StateUpdate;

absl::Status Unfit(absl::string_view what) {
  return absl::FailedPreconditionError(what);
}

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

// OK if `spec` is a valid spec in normal form (as NormalizeJobSpec leaves
// it). The order size limit is the daemon's current setting, not part of
// the spec's validity, so it is not applied here.
absl::Status CheckNormalSpec(const shard::v1::JobSpec& spec) {
  absl::StatusOr<shard::v1::JobSpec> normal =
      plan::NormalizeJobSpec(spec, UINT64_MAX);
  if (!normal.ok()) return normal.status();
  if (!google::protobuf::util::MessageDifferencer::Equals(*normal, spec)) {
    return Unfit(absl::StrCat("job spec {", plan::DescribeJobSpec(spec),
                              "} is not in normal form"));
  }
  return absl::OkStatus();
}

// OK if `members` are distinct valid member ids, at most `max` of them.
absl::Status CheckMemberList(const std::vector<std::string>& members,
                             uint32_t max, absl::string_view what) {
  if (members.size() > max) {
    return Unfit(absl::StrCat(what, " has ", members.size(),
                              " members, more than the job's maximum ", max));
  }
  std::set<absl::string_view> seen;
  for (const std::string& member : members) {
    if (absl::Status s = plan::ValidateMemberId(member); !s.ok()) return s;
    if (!seen.insert(member).second) {
      return Unfit(absl::StrCat(what, " lists member \"", member, "\" twice"));
    }
  }
  return absl::OkStatus();
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

// OK if a world of `world` (by rank) may form from `job`'s members now.
absl::Status CheckWorld(const JobState& job,
                        const std::vector<std::string>& world) {
  if (absl::Status s =
          CheckMemberList(world, job.spec.max_world_size(), "the world");
      !s.ok()) {
    return s;
  }
  for (const std::string& member : world) {
    if (!job.IsMember(member)) {
      return Unfit(absl::StrCat("the world includes \"", member,
                                "\", which is not a joined member"));
    }
  }
  const uint32_t min = job.MinWorldSize();
  if (world.size() < min) {
    return Unfit(absl::StrCat("a world of ", world.size(),
                              " members is below the minimum of ", min));
  }
  return absl::OkStatus();
}

// OK if (epoch, position) is progress the job's current world can record:
// a round boundary of the world's layout of that epoch, in normal form (the
// end of an epoch is stored as the start of the next, but for the last one).
absl::Status CheckProgress(const JobState& job, uint64_t epoch,
                           uint64_t position) {
  if (absl::Status s = plan::ValidateEpoch(epoch); !s.ok()) return s;
  absl::StatusOr<plan::ShardLayout> world_layout = job.WorldLayout(epoch);
  if (!world_layout.ok()) return Unfit(world_layout.status().message());
  const plan::ShardLayout& layout = *world_layout;
  if (!layout.IsRoundBoundary(position) ||
      (position == layout.total() && epoch != plan::kMaxEpoch &&
       position != layout.base())) {
    return Unfit(absl::StrCat(
        "position ", position, " of epoch ", epoch,
        " is not a round boundary of the layout (base ", layout.base(),
        ", world size ", layout.world_size(), ", end ", layout.total(), ")"));
  }
  return absl::OkStatus();
}

// OK if `member` was launched in a world the job's size bounds allow (0:
// not said).
absl::Status CheckLaunchWorldSize(const shard::v1::JobSpec& spec,
                                  const std::string& member, uint32_t launch) {
  if (launch == 0 ||
      (spec.min_world_size() <= launch && launch <= spec.max_world_size())) {
    return absl::OkStatus();
  }
  return Unfit(absl::StrCat("member \"", member,
                            "\" was launched in a world of ", launch,
                            ", outside the job's ", spec.min_world_size(), "..",
                            spec.max_world_size()));
}

// Adds the record's members in join order with their incarnations,
// requested ranks and launch world sizes; FAILED_PRECONDITION for any of
// them recorded for a non-member, or a launch size out of the job's bounds.
absl::Status AddRecordedMembers(const shard::state::v1::JobRecord& record,
                                JobState& job) {
  if (absl::Status s =
          CheckMemberList({record.members().begin(), record.members().end()},
                          job.spec.max_world_size(), "the member list");
      !s.ok()) {
    return s;
  }
  for (const std::string& member : record.members()) {
    auto incarnation = record.member_incarnations().find(member);
    auto requested = record.member_requested_ranks().find(member);
    auto launch = record.member_launch_world_sizes().find(member);
    if (launch != record.member_launch_world_sizes().end()) {
      if (absl::Status s =
              CheckLaunchWorldSize(job.spec, member, launch->second);
          !s.ok()) {
        return s;
      }
    }
    job.AddMember(
        member,
        incarnation == record.member_incarnations().end() ? 0
                                                          : incarnation->second,
        requested == record.member_requested_ranks().end()
            ? std::nullopt
            : std::optional<uint32_t>(requested->second),
        launch == record.member_launch_world_sizes().end() ? 0
                                                           : launch->second);
  }
  if (job.incarnations.size() != record.member_incarnations().size() ||
      job.requested_ranks.size() != record.member_requested_ranks().size() ||
      job.launch_sizes.size() != record.member_launch_world_sizes().size()) {
    return Unfit(
        "an incarnation, requested rank or launch world size is recorded for "
        "a non-member (or is 0)");
  }
  return absl::OkStatus();
}

// Sets, for balanced batches, the worlds that serve the generation's
// epoch, checked: from 0, at increasing positions, the last at or before
// the generation's start.
absl::Status SetEpochWorlds(const shard::state::v1::JobRecord& record,
                            JobState& job) {
  for (const shard::state::v1::EpochWorld& world : record.epoch_worlds()) {
    const bool first = job.epoch_worlds.empty();
    if (!job.spec.has_batches() || (first && world.base() != 0) ||
        (!first && world.base() <= job.epoch_worlds.back().base) ||
        world.base() > job.generation_base || world.world_size() == 0 ||
        world.world_size() > plan::kMaxWorldSize) {
      return Unfit(
          "the worlds of the generation's epoch are not in order or not of "
          "a job with balanced batches");
    }
    job.epoch_worlds.push_back(
        plan::EpochLink{world.base(), world.world_size()});
  }
  if (job.epoch_worlds.empty() && job.spec.has_batches() &&
      job.generation != 0) {
    // Written before they were recorded: one world served the epoch.
    const uint32_t size =
        record.world_size() > 0 ? record.world_size() : job.spec.world_size();
    job.epoch_worlds.push_back(plan::EpochLink{0, size});
  }
  return absl::OkStatus();
}

// Sets the recorded world (with the rules of a re-formed world) and checks
// the committed progress against it, or against the epoch without one.
absl::Status SetRecordedWorld(const shard::state::v1::JobRecord& record,
                              JobState& job) {
  const std::vector<std::string> world(record.world().begin(),
                                       record.world().end());
  if (world.empty()) {
    if (absl::Status s = plan::ValidateEpoch(job.committed_epoch); !s.ok()) {
      return s;
    }
    // Each world of a balanced-batch epoch may pad its last window.
    const uint64_t pads = std::max<uint64_t>(job.epoch_worlds.size(), 1);
    if (job.committed_position >
        plan::EpochSize(job.spec) + pads * job.spec.max_world_size()) {
      return Unfit("the committed position lies past the epoch");
    }
    return absl::OkStatus();
  }
  if (job.generation == 0) return Unfit("a world without generation");
  // generation != 0: the elastic minimum applies, as for a re-formed world.
  if (absl::Status s = CheckWorld(job, world); !s.ok()) return s;
  job.SetWorld(world);
  return CheckProgress(job, job.committed_epoch, job.committed_position);
}

// Marks the recorded members awaiting re-join: members outside the world,
// each once.
absl::Status SetAwaitingRejoin(const shard::state::v1::JobRecord& record,
                               JobState& job) {
  for (const std::string& member : record.awaiting_rejoin()) {
    if (!job.IsMember(member) || job.RankOf(member) ||
        !job.awaiting_rejoin.insert(member).second) {
      return Unfit(absl::StrCat(
          "member \"", member,
          "\" awaits re-join but is no member, is in the world or is "
          "listed twice"));
    }
  }
  return absl::OkStatus();
}

// The job a snapshot record describes, as `incarnation`, after the rules a
// job meets on its own (the coordinator-wide counters are the caller's).
absl::StatusOr<JobState> JobFromRecord(
    const shard::state::v1::JobRecord& record, uint64_t incarnation) {
  if (absl::Status s = CheckNormalSpec(record.spec()); !s.ok()) return s;
  JobState job;
  job.job_id = record.job_id();
  job.spec = record.spec();
  job.incarnation = incarnation;
  job.generation = record.generation();
  job.generation_floor = record.generation_floor();
  job.generation_epoch = record.generation_epoch();
  job.generation_base = record.generation_base();
  if (absl::Status s = SetEpochWorlds(record, job); !s.ok()) return s;
  job.committed_epoch = record.committed_epoch();
  job.committed_position = record.committed_position();
  if (job.generation != 0 && job.generation <= job.generation_floor) {
    return Unfit(absl::StrCat("generation ", job.generation,
                              " is not above its job's floor ",
                              job.generation_floor));
  }
  if (absl::Status s = AddRecordedMembers(record, job); !s.ok()) return s;
  if (std::make_pair(job.generation_epoch, job.generation_base) >
      std::make_pair(job.committed_epoch, job.committed_position)) {
    return Unfit("the world's start lies after the committed progress");
  }
  if (absl::Status s = SetRecordedWorld(record, job); !s.ok()) return s;
  if (absl::Status s = SetAwaitingRejoin(record, job); !s.ok()) return s;
  return job;
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
  for (const auto& [id, shared_job] : jobs_) {
    const JobState& job = *shared_job;
    shard::state::v1::JobRecord* record = snapshot.add_jobs();
    record->set_job_id(id);
    record->set_incarnation(job.incarnation);
    *record->mutable_spec() = job.spec;
    record->set_generation(job.generation);
    record->set_generation_floor(job.generation_floor);
    for (const std::string& member : job.members) record->add_members(member);
    record->mutable_member_incarnations()->insert(job.incarnations.begin(),
                                                  job.incarnations.end());
    record->mutable_member_requested_ranks()->insert(
        job.requested_ranks.begin(), job.requested_ranks.end());
    record->mutable_member_launch_world_sizes()->insert(
        job.launch_sizes.by_member().begin(),
        job.launch_sizes.by_member().end());
    for (const std::string& member : job.world) record->add_world(member);
    for (const std::string& member : job.members) {
      if (job.AwaitsRejoin(member)) record->add_awaiting_rejoin(member);
    }
    record->set_generation_epoch(job.generation_epoch);
    record->set_generation_base(job.generation_base);
    for (const plan::EpochLink& world : job.epoch_worlds) {
      shard::state::v1::EpochWorld* stored = record->add_epoch_worlds();
      stored->set_base(world.base);
      stored->set_world_size(world.world_size);
    }
    record->set_committed_epoch(job.committed_epoch);
    record->set_committed_position(job.committed_position);
  }
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
