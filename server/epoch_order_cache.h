// Computes each (job incarnation, epoch) order once and shares it between
// ranks.
//
// Orders are keyed by the job's incarnation (a coordinator-wide number never
// reused), not its id, so a job deleted and re-created under the same id
// never sees the old job's orders. Claim() reserves an order cheaply and is
// meant to run under the caller's lock, in the same critical section that
// read the job's state, so the claim matches that state; Await() then
// computes or waits outside the lock. Get() is Claim() + Await(). The order
// is computed on the calling thread when nobody has started it; concurrent
// callers for the same key wait for that one computation. After Get(e) the
// order of e + 1 is prepared on a background thread, unless the cache still
// holds an epoch older than e (some rank may still read it): so a job holds at
// most two orders, the current one and the next. Orders older than (requested
// epoch - 1) are dropped, and ReleaseBefore() (a commit reached a new epoch)
// drops all older ones and prepares what follows. Streams still reading a
// dropped order keep it alive through their shared_ptr. Forget() drops a
// deleted job's orders and its queued preparations. Thread-safety: all methods
// are thread-safe. Stop() (also run by the destructor) ends the background
// thread; Get() keeps working without it.
#ifndef SERVER_EPOCH_ORDER_CACHE_H_
#define SERVER_EPOCH_ORDER_CACHE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/plan/epoch_order.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

// One incarnation of a job: its id (for messages) and its coordinator-wide
// creation number (the identity).
struct JobIncarnation {
  std::string job_id;
  uint64_t incarnation = 0;
};

class EpochOrderCache {
 private:
  struct Slot;

 public:
  // A reserved order; Await() it exactly once. Movable, cheap.
  class Claim {
   public:
    Claim() = default;

   private:
    friend class EpochOrderCache;
    JobIncarnation job_;
    shard::v1::JobSpec spec_;
    uint64_t epoch_ = 0;
    // Null for orders that hold no memory (identity, keyed): built in Await.
    std::shared_ptr<Slot> slot_;
    bool compute_here_ = false;
  };

  EpochOrderCache();
  ~EpochOrderCache();
  EpochOrderCache(const EpochOrderCache&) = delete;
  EpochOrderCache& operator=(const EpochOrderCache&) = delete;

  // Reserves the order of `epoch` for the job with this (normalised,
  // immutable) spec and queues the next epoch's preparation. Never blocks on
  // a computation.
  Claim ClaimOrder(const JobIncarnation& job, const shard::v1::JobSpec& spec,
                   uint64_t epoch) ABSL_LOCKS_EXCLUDED(mu_);
  // The claimed order: computed here if nobody started it, else waited for.
  // DEADLINE_EXCEEDED if another thread's computation is not done by
  // `deadline`; RESOURCE_EXHAUSTED if the order cannot be allocated.
  absl::StatusOr<std::shared_ptr<const plan::EpochOrder>> Await(
      Claim claim, absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);
  // ClaimOrder + Await.
  absl::StatusOr<std::shared_ptr<const plan::EpochOrder>> Get(
      const JobIncarnation& job, const shard::v1::JobSpec& spec, uint64_t epoch,
      absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);

  // No rank needs epochs before `epoch` any more: drops their orders and
  // prepares `epoch` and `epoch + 1` in the background.
  void ReleaseBefore(const JobIncarnation& job, const shard::v1::JobSpec& spec,
                     uint64_t epoch) ABSL_LOCKS_EXCLUDED(mu_);

  // Drops every cached order of the incarnation and its queued
  // preparations (the job was deleted).
  void Forget(uint64_t incarnation) ABSL_LOCKS_EXCLUDED(mu_);

  // Number of queued preparations, for tests.
  size_t queued() const ABSL_LOCKS_EXCLUDED(mu_);

  // Number of cached orders (ready or being computed), for tests and metrics.
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

  // Stops the prefetch thread; pending prefetches are dropped.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Key = std::pair<uint64_t, uint64_t>;  // (incarnation, epoch)
  // One cached order. `order` is null while computing; `failed` is set when
  // the computation threw (the slot is then removed from the map).
  struct Slot {
    std::shared_ptr<const plan::EpochOrder> order;
    bool failed = false;
  };
  struct Prefetch {
    JobIncarnation job;
    shard::v1::JobSpec spec;
    uint64_t epoch;
  };

  // Computes the slot's order outside the lock and publishes it.
  void Fill(const Key& key, const std::shared_ptr<Slot>& slot,
            const shard::v1::JobSpec& spec) ABSL_LOCKS_EXCLUDED(mu_);
  void EvictOlderThan(uint64_t incarnation, uint64_t epoch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PrefetchLoop() ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  // Slot contents are guarded by mu_ as well.
  std::map<Key, std::shared_ptr<Slot>> slots_ ABSL_GUARDED_BY(mu_);
  std::deque<Prefetch> prefetch_queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread prefetch_thread_;
};

}  // namespace shard::server

#endif  // SERVER_EPOCH_ORDER_CACHE_H_
