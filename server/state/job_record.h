// A job as a snapshot holds it (shard.state.v1.JobRecord) and back. Used
// by CoordinatorState::ToSnapshot / FromSnapshot, which own the
// coordinator-wide counters; pure functions, internal to server/state/.
#ifndef SERVER_STATE_JOB_RECORD_H_
#define SERVER_STATE_JOB_RECORD_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "server/state/job_state.h"
#include "shard/state/v1/updates.pb.h"

namespace shard::server {

// Every field of `job` that a restart needs.
shard::state::v1::JobRecord JobRecordOf(const JobState& job);
// The job a snapshot record describes, as `incarnation`, after the rules a
// job meets on its own; FAILED_PRECONDITION (or INVALID_ARGUMENT for its
// spec) naming what does not fit.
absl::StatusOr<JobState> JobFromRecord(
    const shard::state::v1::JobRecord& record, uint64_t incarnation);

}  // namespace shard::server

#endif  // SERVER_STATE_JOB_RECORD_H_
