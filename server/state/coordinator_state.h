// The coordinator's state as data: jobs, their specs, members, generations
// and committed progress.
//
// Changes only through Apply(update), which first runs Check(update): the
// rules every update must meet to fit the state, the same for a live
// request (the service checks before it journals) and for a record replayed
// from disk (where a record that does not fit is data loss). An update that
// fails Check changes nothing. Replaying the same updates always rebuilds
// the same state, including the incarnation and generation numbers, which
// are coordinator-wide and never reused. No locks, I/O or RPC here; the
// owner serialises access (not thread-safe on its own). A copy shares the
// jobs that have not changed since, which are never changed in place: a
// copy may be read on another thread while the original changes.
#ifndef SERVER_STATE_COORDINATOR_STATE_H_
#define SERVER_STATE_COORDINATOR_STATE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/state/job_state.h"
#include "shard/state/v1/updates.pb.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

class CoordinatorState {
 public:
  // OK if `update` fits the current state; otherwise FAILED_PRECONDITION
  // (or INVALID_ARGUMENT for a malformed field) saying what does not fit.
  absl::Status Check(const shard::state::v1::StateUpdate& update) const;
  // Check(update), then applies it. On error the state is unchanged.
  absl::Status Apply(const shard::state::v1::StateUpdate& update);

  // The job, or nullptr if unknown. The pointer stays valid until the next
  // Apply.
  const JobState* FindJob(absl::string_view job_id) const;

  // The number the next GenerationFormed must exceed.
  uint64_t last_generation() const { return last_generation_; }

  // The whole state, labelled with the journal sequence it includes.
  shard::state::v1::StateSnapshot ToSnapshot(uint64_t sequence) const;
  // The state a snapshot describes, after checking that it is consistent
  // (the same rules as Check): FAILED_PRECONDITION saying what is wrong.
  static absl::StatusOr<CoordinatorState> FromSnapshot(
      const shard::state::v1::StateSnapshot& snapshot);

  // Jobs by id. Each job is shared with the copies of this state made
  // before its last change (copy-on-write), so a copy costs a pointer per
  // job, not the jobs' members.
  using Jobs =
      std::map<std::string, std::shared_ptr<const JobState>, std::less<>>;
  const Jobs& jobs() const { return jobs_; }
  // The ranks the jobs count now (JobState::RanksCounted): their members,
  // or the members a forming world waits for. The heartbeat pace and the
  // waiting-call limit follow it.
  uint64_t ranks_held() const { return ranks_held_; }

 private:
  absl::StatusOr<const JobState*> CheckedJob(absl::string_view job_id,
                                             absl::string_view update) const;
  // Check() of each update type.
  absl::Status CheckJobCreated(
      const shard::state::v1::JobCreated& created) const;
  absl::Status CheckMemberJoined(
      const shard::state::v1::MemberJoined& joined) const;
  absl::Status CheckMemberRemoved(
      const shard::state::v1::MemberRemoved& removed) const;
  absl::Status CheckGenerationFormed(
      const shard::state::v1::GenerationFormed& formed) const;
  absl::Status CheckProgressCommitted(
      const shard::state::v1::ProgressCommitted& committed) const;

  // Apply() of a checked update, by type.
  void ApplyChecked(const shard::state::v1::StateUpdate& update);
  // Apply() of each update type (after Check).
  void ApplyJobCreated(const shard::state::v1::JobCreated& created);
  void ApplyMemberJoined(const shard::state::v1::MemberJoined& joined);
  void ApplyGenerationFormed(const shard::state::v1::GenerationFormed& formed);
  void ApplyProgressCommitted(
      const shard::state::v1::ProgressCommitted& committed);
  // The job to change, copied first if a copy of the state shares it.
  JobState& MutableJob(absl::string_view job_id);

  Jobs jobs_;
  uint64_t ranks_held_ = 0;
  uint64_t last_generation_ = 0;
  uint64_t last_incarnation_ = 0;
};

}  // namespace shard::server

#endif  // SERVER_STATE_COORDINATOR_STATE_H_
