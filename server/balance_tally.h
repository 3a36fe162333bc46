// The balance figures of one balanced-batch job (plan::BalanceFigures) for
// the latest epoch its streams read, over the windows the coordinator
// arranged for them: each window counted once however often it was
// arranged (SharedWindows reports every arrangement). A window of an
// earlier epoch is ignored; one of a later epoch starts the figures anew.
//
// Thread-safe.
#ifndef SERVER_BALANCE_TALLY_H_
#define SERVER_BALANCE_TALLY_H_

#include <cstdint>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "common/plan/balance_figures.h"
#include "common/plan/window_batches.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

class BalanceTally {
 public:
  // Window `window` of the world that began at position `world_base` of
  // `epoch` was arranged as `batches`.
  void Add(uint64_t epoch, uint64_t world_base, uint64_t window,
           const plan::WindowBatches& batches) ABSL_LOCKS_EXCLUDED(mu_);
  // The figures so far; nullopt before the first window.
  std::optional<shard::v1::BatchBalance> Figures() const
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::optional<uint64_t> epoch_ ABSL_GUARDED_BY(mu_);
  // (world_base, window) of the windows counted in epoch_.
  absl::flat_hash_set<std::pair<uint64_t, uint64_t>> counted_
      ABSL_GUARDED_BY(mu_);
  plan::BalanceFigures figures_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shard::server

#endif  // SERVER_BALANCE_TALLY_H_
