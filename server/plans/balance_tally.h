// The balance figures of one balanced-batch job (plan::BalanceFigures) for
// the latest epoch its streams read, over the windows their ranks took
// (SharedWindows reports a window's first take, again after it was
// arranged again): each window counted once, and none before a stream
// took it. The figures are those of the latest world of that epoch: a
// window of a world that began later in the epoch (a resize) starts them
// anew from its base, so no step is counted twice (and a later world that
// serves nothing leaves no figures); one of an earlier world, or of an
// earlier epoch, is ignored.
//
// Thread-safe.
#ifndef SERVER_PLANS_BALANCE_TALLY_H_
#define SERVER_PLANS_BALANCE_TALLY_H_

#include <cstdint>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "common/plan/batches/balance_figures.h"
#include "common/plan/batches/window_batches.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

class BalanceTally {
 public:
  // A stream of the world that began at position `world_base` of `epoch`
  // opened: a later world than the one counted starts the figures anew,
  // although it may take no window (a resize that left it nothing).
  void BeginWorld(uint64_t epoch, uint64_t world_base) ABSL_LOCKS_EXCLUDED(mu_);
  // Window `window` of the world that began at position `world_base` of
  // `epoch`, arranged as `batches`, was taken by a rank.
  void Add(uint64_t epoch, uint64_t world_base, uint64_t window,
           const plan::WindowBatches& batches) ABSL_LOCKS_EXCLUDED(mu_);
  // The figures so far; nullopt while the world counted has no step.
  std::optional<shard::v1::BatchBalance> Figures() const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Whether (epoch, world_base) is the world counted, after starting the
  // figures anew for a later one; false for an earlier one.
  bool CountsWorld(uint64_t epoch, uint64_t world_base)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  // The epoch and world base counted.
  std::optional<std::pair<uint64_t, uint64_t>> world_ ABSL_GUARDED_BY(mu_);
  // The windows counted in world_.
  absl::flat_hash_set<uint64_t> counted_ ABSL_GUARDED_BY(mu_);
  plan::BalanceFigures figures_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shard::server

#endif  // SERVER_PLANS_BALANCE_TALLY_H_
