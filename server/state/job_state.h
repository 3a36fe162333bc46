// One job as data: its spec, members in join order, the world formed
// from them, and committed progress, with the rules of one job (who forms
// the next world, what a removal ends, which layout an epoch has).
// Part of CoordinatorState, which changes it only through updates that
// passed its Check; not thread-safe on its own.
#ifndef SERVER_STATE_JOB_STATE_H_
#define SERVER_STATE_JOB_STATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/plan/batches/epoch_worlds.h"
#include "common/plan/layouts/shard_layout.h"
#include "server/state/join_order.h"
#include "server/state/launch_sizes.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

struct JobState {
  std::string job_id;
  // Coordinator-wide creation number: a job deleted and re-created under the
  // same id gets a new one.
  uint64_t incarnation = 0;
  shard::v1::JobSpec spec;  // Normalised.
  // Joined members in join order: the ranks of the next world formed.
  JoinOrder members;
  // The current generation's members by rank; empty while no world is
  // formed (before the first one, or after a member of it was removed).
  std::vector<std::string> world;
  // Number of the latest world formed (0: none yet).
  uint64_t generation = 0;
  // The coordinator's last generation when this job was created: a
  // generation in 1..generation_floor belongs to an earlier job.
  uint64_t generation_floor = 0;
  // Where the current generation's layout starts.
  uint64_t generation_epoch = 0;
  uint64_t generation_base = 0;
  // Balanced batches only: the worlds that serve generation_epoch, in
  // order, the first from position 0, the current generation's last. A
  // later world serves what the earlier ones left (common/plan/
  // epoch_worlds.h); a world formed with the size of the one before
  // continues it (a restart, a replaced rank), so only changes of size
  // are listed. Empty before the first world.
  std::vector<plan::EpochLink> epoch_worlds;
  // Last committed progress: every rank consumed committed_position
  // entries of epoch committed_epoch.
  uint64_t committed_epoch = 0;
  uint64_t committed_position = 0;

  // Lookup index of `world` (member -> rank), so that joins and wake-ups
  // of large worlds cost O(1) per member. CoordinatorState keeps it in
  // sync with every change through SetWorld.
  std::unordered_map<std::string, uint32_t> ranks;

  // Incarnation each member joined with, when it gave one; an entry lives
  // exactly as long as its membership (so this is bounded by the members).
  std::unordered_map<std::string, uint64_t> incarnations;
  // The rank each member asked for, when it asked (bounded likewise).
  std::unordered_map<std::string, uint32_t> requested_ranks;
  // Members of a world that ended under them (another of its members was
  // removed) that have not joined again since. They stay members, but no
  // world forms while one of them awaits (the service's rule): the process
  // behind such a member may be dead (a restarted launcher replaced it),
  // and one that lives holds the ended generation and re-joins on ABORTED.
  // A member leaves this set by joining again or by being removed (left,
  // lease expired, restarted).
  std::unordered_set<std::string> awaiting_rejoin;
  // The size each member's launcher started it in, for members not in a
  // world since they joined (a world's survivors re-join without one).
  LaunchSizes launch_sizes;

  void AddMember(const std::string& member_id, uint64_t incarnation = 0,
                 std::optional<uint32_t> requested_rank = std::nullopt,
                 uint32_t launch_world_size = 0);
  // A member awaiting re-join joined again: it counts for worlds again
  // (by the elastic rule: a survivor carries no launch size).
  void Rejoin(const std::string& member_id,
              std::optional<uint32_t> requested_rank);
  // Removes the member; if it was part of the world, the world ends and
  // its other members await re-join.
  void RemoveMember(const std::string& member_id);
  // The member's incarnation; 0 when unknown (not given, or not a member).
  uint64_t IncarnationOf(const std::string& member_id) const;
  void SetWorld(std::vector<std::string> new_world);
  // Members a new world may include (joined, not awaiting re-join), in
  // join order.
  std::vector<std::string> EligibleMembers() const;
  // The world the first `size` eligible members (in join order) would
  // form, by rank: a rank below `size` goes to the first of them that
  // requested it, the others fill the free ranks in join order. Requires
  // size <= EligibleMembers().size().
  std::vector<std::string> NextWorld(size_t size) const;

  bool world_formed() const { return !world.empty(); }
  uint32_t world_size() const { return static_cast<uint32_t>(world.size()); }
  bool IsMember(absl::string_view member_id) const;
  bool AwaitsRejoin(const std::string& member_id) const {
    return awaiting_rejoin.count(member_id) != 0;
  }
  // Rank of `member_id` in the current world, if it is part of it.
  std::optional<uint32_t> RankOf(absl::string_view member_id) const;
  // Whether `generation` was given out before this job existed.
  bool PredatesJob(uint64_t generation) const {
    return generation != 0 && generation <= generation_floor;
  }
  // NOT_FOUND if PredatesJob(generation): the caller belongs to a deleted
  // job that had the same id and must stop, not re-join.
  absl::Status CheckNotFromEarlierJob(uint64_t generation) const;
  // FAILED_PRECONDITION when `incarnation` (0: not given) names an older
  // process of `member_id`, which re-joined from a restarted one.
  absl::Status CheckCurrentIncarnation(const std::string& member_id,
                                       uint64_t incarnation) const;
  // OK when `member_id` holds a rank of the current world, of its current
  // incarnation (CheckCurrentIncarnation): `call` (CommitProgress, the
  // store calls) is a member's. FAILED_PRECONDITION when no member is
  // named (a client that predates the rule) or the process is stale,
  // PERMISSION_DENIED when the member holds no rank of the world.
  absl::Status CheckWorldMember(absl::string_view call,
                                const std::string& member_id,
                                uint64_t incarnation) const;
  // Members any world needs at least: world_size for the job's first
  // world unless a launch said its size, min_world_size after.
  uint32_t MinWorldSize() const {
    return FirstWorldBySpec() ? spec.world_size() : spec.min_world_size();
  }
  // The job's first world with no launch that said its size: it waits for
  // the spec's world_size.
  bool FirstWorldBySpec() const {
    return generation == 0 && launch_sizes.empty();
  }
  // Why a world forming where none is formed waits for as many members
  // as it does (WorldSizeAwaited).
  enum class AwaitedBy {
    // The spec's world_size: the first world, no launch said a size.
    kSpecWorldSize,
    // The largest size a launcher started a member in that was in no world
    // since: a job started or restarted as a whole (by torchrun) forms at
    // the launch's size, which an elastic job may change between runs.
    kLaunchSize,
    // min_world_size: survivors of an elastic world re-form with as few as
    // that, even beside a newcomer whose launch named a larger size (its
    // launch's other processes may never come).
    kMinWorldSize,
  };
  AwaitedBy WorldSizeAwaitedBy() const {
    if (!launch_sizes.empty() && !HasSurvivors()) return AwaitedBy::kLaunchSize;
    return FirstWorldBySpec() ? AwaitedBy::kSpecWorldSize
                              : AwaitedBy::kMinWorldSize;
  }
  // Members a world forming where none is formed waits for, by
  // WorldSizeAwaitedBy()'s rule. O(1).
  uint32_t WorldSizeAwaited() const {
    return WorldSizeAwaitedBy() == AwaitedBy::kLaunchSize
               ? launch_sizes.Largest()
               : MinWorldSize();
  }
  // Whether a member that may be in the next world carries no launch size
  // in a job that has had a world: a survivor that joined again (or a
  // member that joined without a spec). A member with a launch size was in
  // no world since it joined, so it never awaits re-join.
  bool HasSurvivors() const {
    return generation > 0 &&
           members.size() - awaiting_rejoin.size() > launch_sizes.size();
  }
  // The ranks the job counts for the heartbeat pace and the waiting-call
  // limit: none without members; its members, or the members its next
  // world waits for while one is forming, whichever is more.
  uint64_t RanksCounted() const {
    if (members.size() == 0) return 0;
    const uint64_t held = members.size();
    return world_formed() ? held : std::max<uint64_t>(held, WorldSizeAwaited());
  }
  // The current generation's layout of `epoch`: FAILED_PRECONDITION for an
  // epoch completed before the generation formed.
  absl::StatusOr<plan::ShardLayout> WorldLayout(uint64_t epoch) const;
  // The worlds that serve `epoch` (>= generation_epoch), the current one
  // last.
  std::vector<plan::EpochLink> WorldsOf(uint64_t epoch) const;
  // The generation that formed now serves `epoch` from `base` with
  // `world_size` ranks: updates epoch_worlds (a world that served nothing
  // of the epoch is replaced).
  void StartGeneration(uint64_t epoch, uint64_t base, uint32_t world_size);
};

}  // namespace shard::server

#endif  // SERVER_STATE_JOB_STATE_H_
