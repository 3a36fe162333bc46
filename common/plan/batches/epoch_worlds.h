// The worlds that serve one epoch of a job with balanced batches, in order:
// the first from position 0, each later one from the position the job had
// committed when it formed (an elastic resize, or a world re-formed with
// another size). A later world serves what its predecessor left: the
// samples of the window its predecessor stopped in that come after the
// first (base - window begin) of that window's arrangement (its micro-
// batches step by step, rank by rank), in increasing order position, then
// the samples of the windows its predecessor had not reached; its own tail
// rule then applies to that rest (epoch_batches.h). Its windows are
// numbered from one past the window its predecessor stopped in.
// docs/balanced-batches.md states the rule; the tests' Python reference
// follows it. Pure value type.
#ifndef COMMON_PLAN_BATCHES_EPOCH_WORLDS_H_
#define COMMON_PLAN_BATCHES_EPOCH_WORLDS_H_

#include <cstdint>
#include <vector>

#include "common/plan/batches/batch_policy.h"
#include "common/plan/batches/epoch_batches.h"
#include "common/plan/layouts/shard_layout.h"

namespace shard::plan {

// One world of an epoch: the epoch position it starts at and its size.
struct EpochLink {
  uint64_t base = 0;
  uint32_t world_size = 1;

  bool operator==(const EpochLink& other) const {
    return base == other.base && world_size == other.world_size;
  }
};

class EpochWorlds {
 public:
  // Requires links non-empty, links[0].base == 0, bases increasing, every
  // world_size >= 1, order_size >= 1 and tail kPad or kDrop. A base past
  // the end of its predecessor's part leaves the later world nothing.
  EpochWorlds(uint64_t order_size, Tail tail, const BatchPolicy& policy,
              std::vector<EpochLink> links);

  // The epoch position after the last world's last window.
  uint64_t total() const { return total_; }
  const EpochLink& last() const { return links_.back(); }
  const std::vector<EpochLink>& links() const { return links_; }
  // Whether Resolve arranges windows of earlier worlds: it then reads the
  // costs of samples anywhere in the epoch order (a caller waits for the
  // whole order).
  bool ArrangesEarlierWorlds() const { return links_.size() > 1; }

  // The last world's part of the epoch. Arranges, with `costs_of`, the
  // window where each later world began (not called for a single world).
  EpochBatches Resolve(const EpochBatches::CostsOf& costs_of, uint64_t seed,
                       uint64_t epoch) const;

 private:
  uint64_t order_size_;
  Tail tail_;
  BatchPolicy policy_;
  std::vector<EpochLink> links_;
  uint64_t total_;
};

}  // namespace shard::plan

#endif  // COMMON_PLAN_BATCHES_EPOCH_WORLDS_H_
