// The offline check of a store's costs (shardd --check-data-dir,
// --check-etcd): every balanced-batch job of a recovered state must find
// its costs in the blobs, whole (their SHA-256 matches the name the job
// gives them) and one per sample of the job, or a restored coordinator
// would answer that job's streams DATA_LOSS. Blocking I/O; reads each set
// of costs once however many jobs name it.
#ifndef SERVER_PLANS_STORED_COSTS_CHECK_H_
#define SERVER_PLANS_STORED_COSTS_CHECK_H_

#include <cstdint>
#include <string>
#include <vector>

#include "server/state/coordinator_state.h"
#include "server/storage/cost_blobs.h"

namespace shard::server {

struct StoredCostsReport {
  // Distinct sets of costs the jobs name, and how many of them are sound.
  uint64_t sets = 0;
  uint64_t sound = 0;
  // One line per problem: the job(s), the costs, what is wrong.
  std::vector<std::string> problems;
};

StoredCostsReport CheckStoredCosts(const CoordinatorState& state,
                                   storage::CostBlobs& blobs);

}  // namespace shard::server

#endif  // SERVER_PLANS_STORED_COSTS_CHECK_H_
