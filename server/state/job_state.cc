#include "server/state/job_state.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/plan/spec/job_spec.h"

namespace shard::server {

bool JobState::IsMember(absl::string_view member_id) const {
  return members.Contains(member_id);
}

std::optional<uint32_t> JobState::RankOf(absl::string_view member_id) const {
  auto found = ranks.find(std::string(member_id));
  if (found == ranks.end()) return std::nullopt;
  return found->second;
}

void JobState::AddMember(const std::string& member_id, uint64_t incarnation,
                         std::optional<uint32_t> requested_rank,
                         uint32_t launch_world_size) {
  members.Add(member_id);
  if (incarnation != 0) incarnations[member_id] = incarnation;
  if (requested_rank) requested_ranks[member_id] = *requested_rank;
  launch_sizes.Set(member_id, launch_world_size);
}

std::vector<std::string> JobState::EligibleMembers() const {
  std::vector<std::string> eligible;
  eligible.reserve(members.size() - awaiting_rejoin.size());
  for (const std::string& member : members) {
    if (!AwaitsRejoin(member)) eligible.push_back(member);
  }
  return eligible;
}

std::vector<std::string> JobState::NextWorld(size_t size) const {
  const std::vector<std::string> eligible = EligibleMembers();
  std::vector<std::string> next(size);
  std::vector<bool> placed(size, false);
  for (size_t i = 0; i < size; ++i) {
    auto requested = requested_ranks.find(eligible[i]);
    if (requested == requested_ranks.end() || requested->second >= size ||
        !next[requested->second].empty()) {
      continue;
    }
    next[requested->second] = eligible[i];
    placed[i] = true;
  }
  size_t free_rank = 0;
  for (size_t i = 0; i < size; ++i) {
    if (placed[i]) continue;
    while (!next[free_rank].empty()) ++free_rank;
    next[free_rank] = eligible[i];
  }
  return next;
}

uint64_t JobState::IncarnationOf(const std::string& member_id) const {
  auto found = incarnations.find(member_id);
  return found == incarnations.end() ? 0 : found->second;
}

void JobState::Rejoin(const std::string& member_id,
                      std::optional<uint32_t> requested_rank) {
  awaiting_rejoin.erase(member_id);
  if (requested_rank) requested_ranks[member_id] = *requested_rank;
}

void JobState::RemoveMember(const std::string& member_id) {
  members.Remove(member_id);
  incarnations.erase(member_id);
  requested_ranks.erase(member_id);
  awaiting_rejoin.erase(member_id);
  launch_sizes.Erase(member_id);
  if (!RankOf(member_id)) return;
  for (const std::string& survivor : world) {
    if (survivor != member_id) awaiting_rejoin.insert(survivor);
  }
  SetWorld({});
}

absl::Status JobState::CheckNotFromEarlierJob(uint64_t generation) const {
  if (!PredatesJob(generation)) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat(
      "generation ", generation, " belongs to an earlier job \"", job_id,
      "\" that was deleted; the job of that id now was created after it "
      "(incarnation ",
      incarnation, "): this process must stop, not re-join"));
}

absl::Status JobState::CheckCurrentIncarnation(const std::string& member_id,
                                               uint64_t incarnation) const {
  const uint64_t current = IncarnationOf(member_id);
  if (incarnation == 0 || current == 0 || incarnation == current) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      absl::StrCat("member \"", member_id, "\" of job \"", job_id,
                   "\" was re-joined by a restarted process (incarnation ",
                   current, "); this process (incarnation ", incarnation,
                   ") is stale and must stop"));
}

absl::Status JobState::CheckWorldMember(absl::string_view call,
                                        const std::string& member_id,
                                        uint64_t incarnation) const {
  if (member_id.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        call, " of job \"", job_id,
        "\" names no member: it is a call of a member of the generation's "
        "world (member_id); upgrade the client"));
  }
  if (!RankOf(member_id).has_value()) {
    return absl::PermissionDeniedError(absl::StrCat(
        call, " of job \"", job_id, "\" is a member's: \"", member_id,
        "\" holds no rank of generation ", generation, "'s world"));
  }
  return CheckCurrentIncarnation(member_id, incarnation);
}

absl::StatusOr<plan::ShardLayout> JobState::WorldLayout(uint64_t epoch) const {
  if (epoch < generation_epoch) {
    return absl::FailedPreconditionError(
        absl::StrCat("epoch ", epoch, " of job \"", job_id,
                     "\" was complete before generation ", generation,
                     " formed (it starts at epoch ", generation_epoch, ")"));
  }
  return plan::LayoutOf(spec, WorldsOf(epoch));
}

std::vector<plan::EpochLink> JobState::WorldsOf(uint64_t epoch) const {
  if (epoch != generation_epoch) return {plan::EpochLink{0, world_size()}};
  if (!spec.has_batches()) {
    return {plan::EpochLink{generation_base, world_size()}};
  }
  if (epoch_worlds.empty()) return {plan::EpochLink{0, world_size()}};
  return epoch_worlds;
}

void JobState::StartGeneration(uint64_t epoch, uint64_t base,
                               uint32_t world_size) {
  if (spec.has_batches()) {
    std::vector<plan::EpochLink> worlds;
    if (base > 0 && !epoch_worlds.empty()) {
      // The worlds so far; a previous epoch's last world served this one
      // from its start.
      worlds = epoch == generation_epoch
                   ? std::move(epoch_worlds)
                   : std::vector<plan::EpochLink>{
                         plan::EpochLink{0, epoch_worlds.back().world_size}};
    }
    if (worlds.empty()) worlds.push_back(plan::EpochLink{0, world_size});
    if (worlds.back().base == base) worlds.pop_back();  // served nothing
    if (worlds.empty() || worlds.back().world_size != world_size) {
      worlds.push_back(plan::EpochLink{base, world_size});
    }
    epoch_worlds = std::move(worlds);
  }
  generation_epoch = epoch;
  generation_base = base;
}

void JobState::SetWorld(std::vector<std::string> new_world) {
  world = std::move(new_world);
  ranks.clear();
  for (size_t rank = 0; rank < world.size(); ++rank) {
    ranks.emplace(world[rank], static_cast<uint32_t>(rank));
    // Journals written before re-joins were recorded may form a world with
    // members still awaiting re-join: being in a world settles it.
    awaiting_rejoin.erase(world[rank]);
    // Its launch formed a world: from now on it is a survivor or not.
    launch_sizes.Erase(world[rank]);
  }
}

}  // namespace shard::server
