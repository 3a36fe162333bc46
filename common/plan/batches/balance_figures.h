// How balanced the steps of balanced-batch windows are: per step, the
// imbalance of its micro-batches' costs (the largest over the mean of the
// ranks'); over the steps, its percentiles and largest value, and the
// padding (micro-batches padded to their longest sample). The percentiles
// come from a histogram of steps of 1/10,000 between 1 and 2, each step's
// bucket computed in exact integer arithmetic: p50 and p99 are the upper
// edge of their bucket (at most 0.0001 above the exact value) or the
// largest value, whichever is smaller. What shardctl plan
// --balance prints and the coordinator reports for the windows it
// arranged (Job.batch_balance). Not thread-safe.
#ifndef COMMON_PLAN_BATCHES_BALANCE_FIGURES_H_
#define COMMON_PLAN_BATCHES_BALANCE_FIGURES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/plan/batches/window_batches.h"
#include "shard/v1/shard.pb.h"

namespace shard::plan {

class BalanceFigures {
 public:
  BalanceFigures();

  // Adds the steps of `window` (arranged with its costs).
  void AddWindow(const WindowBatches& window);

  uint64_t steps() const { return steps_; }
  uint64_t samples() const { return samples_; }
  // The q-quantile of the steps' imbalance (q in (0, 1]); 0 without steps.
  double Imbalance(double q) const;
  double max_imbalance() const { return max_; }
  // (padded - real) / padded over the samples added; 0 without any.
  double padding() const;
  // With a token budget: the real tokens over budget x micro-batches; 0
  // with fixed counts or without any step.
  double fill() const;

 private:
  static constexpr int kBuckets = 10000;  // [1, 2) in steps of 1/10,000

  // floor((x - 1) x kBuckets) for x = world x most / total below 2,
  // kBuckets from 2 on; 0 when total is 0 (x = 1).
  static size_t BucketOf(uint64_t most, unsigned __int128 total,
                         uint32_t world);

  std::vector<uint64_t> histogram_;  // kBuckets, then one for >= 2
  uint64_t steps_ = 0;
  uint64_t samples_ = 0;
  double max_ = 0;
  double tokens_ = 0;
  double padded_tokens_ = 0;
  double capacity_ = 0;
};

// The figures of epoch `epoch` as the wire carries them.
shard::v1::BatchBalance BalanceProto(const BalanceFigures& figures,
                                     uint64_t epoch);

}  // namespace shard::plan

#endif  // COMMON_PLAN_BATCHES_BALANCE_FIGURES_H_
