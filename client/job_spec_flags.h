// The job-spec flags that `shardctl create-job` and `shard-train` share:
//   --seed S  --shuffle true|false  --tail pad|drop|uneven
//   --torch-randperm legacy|2.6  --shuffle-algorithm torch|feistel|block
//   --block-size B  --window-blocks K  --min-world-size N  --max-world-size N
// Defaults are the coordinator's (seed 0, shuffle, pad, 2.6, torch). The
// dataset size and world size come from each program's own flags.
#ifndef CLIENT_JOB_SPEC_FLAGS_H_
#define CLIENT_JOB_SPEC_FLAGS_H_

#include <cstdint>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "client/cli_flags.h"
#include "shard/v1/shard.pb.h"

namespace shard::client {

// Adds the flag names above to `accepted`.
void AddJobSpecFlagNames(std::set<std::string>& accepted);

// True when any of the flags above was given.
bool HasJobSpecFlags(const CliFlags& flags);

// The spec the flags describe, with `dataset_size` and `world_size`.
// INVALID_ARGUMENT for a malformed value or one that does not fit the spec
// (the coordinator checks the rest, e.g. block options without the block
// shuffle).
absl::StatusOr<shard::v1::JobSpec> JobSpecFromFlags(const CliFlags& flags,
                                                    uint64_t dataset_size,
                                                    uint64_t world_size);

}  // namespace shard::client

#endif  // CLIENT_JOB_SPEC_FLAGS_H_
