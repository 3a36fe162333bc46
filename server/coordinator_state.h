// The coordinator's state as data: jobs, their specs, members, generations
// and committed progress.
//
// Changes only through Apply(update). Apply never fails: the service
// validates each update against this state before applying it, so replaying
// the same updates always rebuilds the same state. No locks, I/O or RPC here;
// the owner serialises access (not thread-safe on its own).
#ifndef SERVER_COORDINATOR_STATE_H_
#define SERVER_COORDINATOR_STATE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "shard/state/v1/updates.pb.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

struct JobState {
  std::string job_id;
  shard::v1::JobSpec spec;  // Normalised.
  // Joined members in join order: the ranks of the next world formed.
  std::vector<std::string> members;
  // The current generation's members by rank; empty while no world is
  // formed (before the first one, or after a member of it was removed).
  std::vector<std::string> world;
  // Number of the latest world formed (0: none yet).
  uint64_t generation = 0;
  // Where the current generation's layout starts.
  uint64_t generation_epoch = 0;
  uint64_t generation_base = 0;
  // Last committed progress: every rank consumed committed_position
  // entries of epoch committed_epoch.
  uint64_t committed_epoch = 0;
  uint64_t committed_position = 0;

  bool world_formed() const { return !world.empty(); }
  uint32_t world_size() const { return static_cast<uint32_t>(world.size()); }
  bool IsMember(absl::string_view member_id) const;
  // Rank of `member_id` in the current world, if it is part of it.
  std::optional<uint32_t> RankOf(absl::string_view member_id) const;
};

class CoordinatorState {
 public:
  // Applies a validated update. An update that does not fit the state
  // (unknown job, duplicate job or member) is a programming error and
  // aborts the process with a message.
  void Apply(const shard::state::v1::StateUpdate& update);

  // The job, or nullptr if unknown. The pointer stays valid until the next
  // Apply.
  const JobState* FindJob(absl::string_view job_id) const;

  // The whole state, labelled with the journal sequence it includes.
  shard::state::v1::StateSnapshot ToSnapshot(uint64_t sequence) const;
  // The state a snapshot describes.
  static CoordinatorState FromSnapshot(
      const shard::state::v1::StateSnapshot& snapshot);

  // All jobs by id.
  const std::map<std::string, JobState, std::less<>>& jobs() const {
    return jobs_;
  }

 private:
  JobState& MustFind(const std::string& job_id, const char* update);

  std::map<std::string, JobState, std::less<>> jobs_;
};

}  // namespace shard::server

#endif  // SERVER_COORDINATOR_STATE_H_
