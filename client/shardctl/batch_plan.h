// `shardctl plan` of a job with balanced batches (JobSpec.batches): the
// epoch's plan computed here, by the planning code the coordinator runs
// (common/plan), from the job's spec and the costs it was created with
// (files, checked against the spec's SHA-256): one rank's micro-batches
// with their costs, or the balance figures of every step.
#ifndef CLIENT_SHARDCTL_BATCH_PLAN_H_
#define CLIENT_SHARDCTL_BATCH_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "shard/v1/shard.pb.h"

namespace shard::shardctl {

struct BatchPlanRequest {
  uint64_t epoch = 0;
  uint32_t rank = 0;
  std::vector<std::string> costs_files;  // as ReadDatasetCosts takes them
  std::string costs_format = "auto";     // as ReadCostsFile takes it
  bool balance = false;  // the figures of every step instead of a rank's
};

// Prints, for the normalised `spec` (it has batches), one line per
// micro-batch of the rank: "STEP_END COST: INDEX ..." (STEP_END as the
// stream's step_ends, COST under the job's cost model); with `balance`,
// the epoch's steps and the imbalance of their cost (max / mean of the
// ranks', p50 / p99 / max) and the padding. FAILED_PRECONDITION when the
// files' costs are not the job's; their errors as ReadDatasetCosts'.
absl::Status PrintBatchPlan(const shard::v1::JobSpec& spec,
                            const BatchPlanRequest& request);

// The lines `plan --balance` and `describe` print for `balance`: the step
// cost imbalance (p50, p99, max), the padding and, with a token budget,
// the fill, each ending in a newline.
std::string BalanceLines(const shard::v1::BatchBalance& balance);

}  // namespace shard::shardctl

#endif  // CLIENT_SHARDCTL_BATCH_PLAN_H_
