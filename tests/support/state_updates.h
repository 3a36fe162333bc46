// Builders of valid state updates for tests of CoordinatorState, the
// journal and recovery. Specs are normalised as the service stores them.
#ifndef TESTS_SUPPORT_STATE_UPDATES_H_
#define TESTS_SUPPORT_STATE_UPDATES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "shard/state/v1/updates.pb.h"
#include "shard/v1/shard.pb.h"

namespace shard::testing {

// The normalised spec of N = dataset_size, W = world_size (elastic between
// min and max when given, 0 meaning world_size).
shard::v1::JobSpec NormalSpec(uint64_t dataset_size, uint32_t world_size,
                              uint32_t min_world_size = 0,
                              uint32_t max_world_size = 0);

shard::state::v1::StateUpdate Created(const std::string& job,
                                      const shard::v1::JobSpec& spec);
shard::state::v1::StateUpdate Joined(const std::string& job,
                                     const std::string& member);
shard::state::v1::StateUpdate Removed(const std::string& job,
                                      const std::string& member);
shard::state::v1::StateUpdate Formed(const std::string& job,
                                     uint64_t generation,
                                     const std::vector<std::string>& members,
                                     uint64_t epoch = 0, uint64_t base = 0);
shard::state::v1::StateUpdate Committed(const std::string& job, uint64_t epoch,
                                        uint64_t position);
shard::state::v1::StateUpdate Deleted(const std::string& job);

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_STATE_UPDATES_H_
