// How a job with per-sample costs is cut into balanced micro-batches: a fixed
// count per micro-batch or a cost budget, the cost model, and the window of
// the epoch's order that is balanced together. Pure value type.
// The algorithm that uses it: common/plan/batches/window_batches.h and
// docs/balanced-batches.md.
#ifndef COMMON_PLAN_BATCHES_BATCH_POLICY_H_
#define COMMON_PLAN_BATCHES_BATCH_POLICY_H_

#include <cstdint>

namespace shard::plan {

// What a micro-batch costs, from its samples' costs (e.g. lengths in
// tokens).
enum class BatchCostModel {
  kPadded,  // count x the longest: a batch padded to its longest sample
  kSum,     // the sum: packed sequences, variable-length attention
};

struct BatchPolicy {
  // Exactly one of the two is non-zero.
  uint64_t batch_size = 0;    // samples per micro-batch
  uint64_t batch_tokens = 0;  // cost budget per micro-batch
  BatchCostModel cost_model = BatchCostModel::kPadded;
  // Samples balanced together; 0 picks the default (see WindowSamples).
  uint64_t window = 0;
  // With kSum and batch_tokens: steps are balanced by time (TimeOf) while
  // batch_tokens caps tokens; 0 balances by the cost model.
  uint64_t attention_length = 0;
  // The sum and the count of the job's costs (0: not known): with
  // batch_tokens they size the default window (DefaultWindow).
  uint64_t costs_total = 0;
  uint64_t costs_count = 0;

  // Samples per window for a world of `world_size` ranks (>= 1):
  // max(window or DefaultWindow(W), 16 x W) rounded up to a multiple of W
  // (with batch_tokens), or of W x batch_size (with batch_size), so that a
  // full window makes whole steps under the budget, or of full
  // micro-batches.
  uint64_t WindowSamples(uint64_t world_size) const;
  // The window when none is given: 65,536 samples, or with batch_tokens
  // and the costs' total the samples that hold kDefaultWindowSteps steps
  // at the costs' mean, ceil(256 x W x T x count / total), within
  // 65,536 .. 2^22 (each window's last steps are partly filled: more
  // steps a window, fuller micro-batches).
  uint64_t DefaultWindow(uint64_t world_size) const;
  // The model's cost of a micro-batch of `count` samples whose costs sum
  // to `sum` and whose largest is `longest`.
  uint64_t CostOf(uint64_t count, uint64_t sum, uint64_t longest) const {
    return cost_model == BatchCostModel::kPadded ? count * longest : sum;
  }
  // A sample's time cost with attention_length d > 0: L + floor(L^2 / d)
  // for a sample of L tokens (at most 2^64 - 1: L < 2^32).
  uint64_t TimeOf(uint32_t tokens) const {
    const uint64_t length = tokens;
    return length + length * length / attention_length;
  }
};

inline constexpr uint64_t kDefaultBatchWindow = 65536;
inline constexpr uint64_t kMaxDefaultBatchWindow = uint64_t{1} << 22;
inline constexpr uint64_t kDefaultWindowSteps = 256;

}  // namespace shard::plan

#endif  // COMMON_PLAN_BATCHES_BATCH_POLICY_H_
