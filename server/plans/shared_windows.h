// The arranged windows of one world of a balanced-batch epoch (one job
// incarnation, epoch and chain of worlds), shared by the streams of its
// ranks (BatchWalk), so that each window is arranged once for the W ranks
// that read it instead of once per rank. A rank that asks for a window
// another rank is arranging waits for that arrangement (a few
// milliseconds) instead of repeating it. A window is kept until every
// rank of the world has taken it. The windows kept stay within
// `max_bytes`: past it the newest window is dropped first, as the ranks
// that have yet to take the older ones need them sooner (ranks move
// forward: a rank far ahead arranges its windows alone, and the others
// keep sharing theirs). A rank that takes a dropped window (it was ahead,
// it lagged, or it re-opened its stream) arranges it again, which gives
// the same micro-batches, only later.
//
// Thread-safe.
#ifndef SERVER_PLANS_SHARED_WINDOWS_H_
#define SERVER_PLANS_SHARED_WINDOWS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "common/plan/batches/window_batches.h"

namespace shard::server {

class SharedWindows {
 public:
  using Window = std::shared_ptr<const plan::WindowBatches>;

  // Called with a window when a rank first takes it after it was arranged
  // (on the taking thread, no lock held): a window arranged ahead that no
  // rank took is never reported, and one dropped and arranged again is
  // reported again. May be empty.
  using OnFirstTaken =
      std::function<void(uint64_t window, const plan::WindowBatches&)>;

  // The windows of a world of `world_size` ranks, at most `max_bytes` of
  // them kept; each arrangement made here adds one to `*arranged` (shared
  // with others), and each first take is reported to `on_first_taken`.
  SharedWindows(uint32_t world_size, uint64_t max_bytes,
                std::shared_ptr<std::atomic<uint64_t>> arranged,
                OnFirstTaken on_first_taken = nullptr);

  // Window `window` for `rank` (< world_size): the one kept, the one
  // another caller is arranging (waited for), else the one `arrange`
  // makes (run on this thread, outside the lock), then kept.
  Window Take(uint64_t window, uint32_t rank,
              absl::FunctionRef<plan::WindowBatches()> arrange)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Arranges window `window` with `arrange` (on this thread, outside the
  // lock) before any rank asks for it, then keeps it for the ranks to
  // take; nothing if a rank asked for it or a later window already (Take),
  // or it is kept or being arranged.
  void ArrangeAhead(uint64_t window,
                    absl::FunctionRef<plan::WindowBatches()> arrange)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Kept {
    Window batches;              // null while being arranged
    std::vector<bool> taken_by;  // by rank
    uint32_t takers = 0;
  };
  using Entry = std::map<uint64_t, Kept>::iterator;

  // Arranges `entry`'s window (just made, empty) with `arrange` and keeps
  // it, which wakes the callers waiting for it; the entry is gone again if
  // `arrange` throws.
  void ArrangeInto(Entry entry,
                   absl::FunctionRef<plan::WindowBatches()> arrange)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the newest arranged windows while the bytes kept pass
  // max_bytes_.
  void DropNewest() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Take() under the lock; `first` tells whether this was the window's
  // first take since it was arranged.
  Window TakeLocked(uint64_t window, uint32_t rank,
                    absl::FunctionRef<plan::WindowBatches()> arrange,
                    bool& first) ABSL_LOCKS_EXCLUDED(mu_);
  // Counts `rank` as a taker of `entry` (arranged), setting `first` when
  // it is the first; drops the window once every rank took it.
  Window TakenBy(Entry entry, uint32_t rank, bool& first)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint32_t world_size_;
  const uint64_t max_bytes_;
  const std::shared_ptr<std::atomic<uint64_t>> arranged_;
  const OnFirstTaken on_first_taken_;
  absl::Mutex mu_;
  std::map<uint64_t, Kept> kept_ ABSL_GUARDED_BY(mu_);  // by window
  uint64_t kept_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // One past the latest window a rank asked for.
  uint64_t asked_end_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shard::server

#endif  // SERVER_PLANS_SHARED_WINDOWS_H_
