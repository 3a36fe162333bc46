// The SharedWindows of every world of a balanced-batch epoch being
// streamed, by (job incarnation, epoch, chain of worlds): the streams of
// one world's ranks get the same object, which lives as long as one of
// them holds it. Entries nobody holds are dropped as new ones are made.
// A world whose first window is arranged before any of its ranks streams
// (a new job's epoch 0) is pinned: held here until the first stream asks
// for it, at most kMaxPinned worlds at once (the oldest pin is let go
// first).
//
// Thread-safe (its own mutex; nothing else is locked while it is held).
#ifndef SERVER_PLANS_SHARED_WINDOW_TABLE_H_
#define SERVER_PLANS_SHARED_WINDOW_TABLE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "common/plan/batches/epoch_worlds.h"
#include "server/plans/balance_tally.h"
#include "server/plans/shared_windows.h"

namespace shard::server {

class SharedWindowTable {
 public:
  // Windows kept per world (SharedWindows' max_bytes).
  static constexpr uint64_t kMaxBytesPerWorld = uint64_t{64} << 20;
  // Worlds pinned at once.
  static constexpr size_t kMaxPinned = 16;

  // The windows of epoch `epoch` of the job of `incarnation` served by
  // the last world of `worlds`; made on first use, reporting the windows
  // its ranks take to `balance` (may be null), which begins counting that
  // world (BalanceTally::BeginWorld).
  std::shared_ptr<SharedWindows> For(uint64_t incarnation, uint64_t epoch,
                                     const plan::EpochWorlds& worlds,
                                     std::shared_ptr<BalanceTally> balance)
      ABSL_LOCKS_EXCLUDED(mu_);
  // For(), and held here (pinned) until For() asks for the same world.
  std::shared_ptr<SharedWindows> Pin(uint64_t incarnation, uint64_t epoch,
                                     const plan::EpochWorlds& worlds,
                                     std::shared_ptr<BalanceTally> balance)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Entries held now (expired ones not yet dropped included).
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);
  // Worlds pinned now.
  size_t pinned() const ABSL_LOCKS_EXCLUDED(mu_);
  // Windows arranged so far, all worlds together.
  uint64_t arranged() const { return arranged_->load(); }

 private:
  // incarnation, epoch, then (base, world size) of each world.
  using Key = std::tuple<uint64_t, uint64_t, std::vector<uint64_t>>;

  static Key KeyOf(uint64_t incarnation, uint64_t epoch,
                   const plan::EpochWorlds& worlds);
  // The entry of `key`, made (reporting to `balance`) unless held.
  std::shared_ptr<SharedWindows> FindOrMakeLocked(
      const Key& key, uint64_t epoch, const plan::EpochWorlds& worlds,
      std::shared_ptr<BalanceTally> balance) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<std::atomic<uint64_t>> arranged_ =
      std::make_shared<std::atomic<uint64_t>>(0);
  mutable absl::Mutex mu_;
  absl::flat_hash_map<Key, std::weak_ptr<SharedWindows>> worlds_
      ABSL_GUARDED_BY(mu_);
  size_t sweep_at_ ABSL_GUARDED_BY(mu_) = 16;
  // Oldest first.
  std::vector<std::pair<Key, std::shared_ptr<SharedWindows>>> pinned_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace shard::server

#endif  // SERVER_PLANS_SHARED_WINDOW_TABLE_H_
