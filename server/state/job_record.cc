#include "server/state/job_record.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/plan/spec/job_spec.h"
#include "server/state/state_rules.h"

namespace shard::server {

shard::state::v1::JobRecord JobRecordOf(const JobState& job) {
  shard::state::v1::JobRecord record;
  record.set_job_id(job.job_id);
  record.set_incarnation(job.incarnation);
  *record.mutable_spec() = job.spec;
  record.set_generation(job.generation);
  record.set_generation_floor(job.generation_floor);
  for (const std::string& member : job.members) record.add_members(member);
  record.mutable_member_incarnations()->insert(job.incarnations.begin(),
                                               job.incarnations.end());
  record.mutable_member_requested_ranks()->insert(job.requested_ranks.begin(),
                                                  job.requested_ranks.end());
  record.mutable_member_launch_world_sizes()->insert(
      job.launch_sizes.by_member().begin(), job.launch_sizes.by_member().end());
  for (const std::string& member : job.world) record.add_world(member);
  for (const std::string& member : job.members) {
    if (job.AwaitsRejoin(member)) record.add_awaiting_rejoin(member);
  }
  record.set_generation_epoch(job.generation_epoch);
  record.set_generation_base(job.generation_base);
  for (const plan::EpochLink& world : job.epoch_worlds) {
    shard::state::v1::EpochWorld* stored = record.add_epoch_worlds();
    stored->set_base(world.base);
    stored->set_world_size(world.world_size);
  }
  record.set_committed_epoch(job.committed_epoch);
  record.set_committed_position(job.committed_position);
  return record;
}

namespace {

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

}  // namespace

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

}  // namespace shard::server
