// The rules CoordinatorState's updates and snapshots share: what a spec,
// a member list, a world, a progress and a launch size must be for a job.
// Each returns OK or FAILED_PRECONDITION naming what does not fit (a spec
// also INVALID_ARGUMENT, as plan::NormalizeJobSpec says). Pure functions;
// internal to server/state/.
#ifndef SERVER_STATE_STATE_RULES_H_
#define SERVER_STATE_STATE_RULES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "server/state/job_state.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

// FAILED_PRECONDITION: an update or snapshot that does not fit the state.
absl::Status Unfit(absl::string_view what);
// OK if `spec` is a valid spec in normal form (as NormalizeJobSpec leaves
// it); the order size limit is the daemon's setting, not applied here.
absl::Status CheckNormalSpec(const shard::v1::JobSpec& spec);
// OK if `members` are distinct valid member ids, at most `max` of them;
// `what` names the list in the error.
absl::Status CheckMemberList(const std::vector<std::string>& members,
                             uint32_t max, absl::string_view what);
// OK if a world of `world` (by rank) may form from `job`'s members now.
absl::Status CheckWorld(const JobState& job,
                        const std::vector<std::string>& world);
// OK if (epoch, position) is progress the job's current world can record:
// a round boundary of the world's layout of that epoch, in normal form
// (the end of an epoch is stored as the start of the next, but for the
// last one).
absl::Status CheckProgress(const JobState& job, uint64_t epoch,
                           uint64_t position);
// OK if `member` was launched in a world the job's size bounds allow (0:
// not said).
absl::Status CheckLaunchWorldSize(const shard::v1::JobSpec& spec,
                                  const std::string& member, uint32_t launch);

}  // namespace shard::server

#endif  // SERVER_STATE_STATE_RULES_H_
