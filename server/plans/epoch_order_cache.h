// Computes each (job incarnation, epoch) order once and shares it between
// ranks.
//
// Orders are keyed by the job's incarnation (a coordinator-wide number never
// reused), not its id, so a job deleted and re-created under the same id
// never sees the old job's orders. ClaimOrder() reserves an order cheaply and
// is meant to run under the caller's lock, in the same critical section that
// read the job's state, so the claim matches that state; Await() (blocking,
// the finished order) or WhenReady() (a callback, as soon as the order is
// allocated: readers follow its shuffle, see EpochOrder::progress) then
// delivers the order outside the lock.
// Get() is ClaimOrder() + Await(). Each order is computed once; concurrent
// callers for the same key share that computation. A small order (at most
// kInlineOrderBytes) is computed by the first caller that needs it, on its
// own thread; a larger one off the caller's thread, started at claim
// time, so that a stream of a small job never waits behind the computation
// of another job's large order. A large order is published as soon as its
// memory is reserved (readers follow its shuffle, see
// EpochOrder::progress) and computed in two parts: its front (the first
// entries, final within milliseconds) on one of the cache's two front
// threads, which compute nothing else, and its rest on its compute threads,
// at a lower CPU priority than the threads serving calls. So a front
// never waits behind another order's rest, and after a restart or failover
// every job's trainers can start before the bulk of any order is computed
// (preparations get their fronts first as well). After a claim of epoch e the
// order of e + 1 is prepared on a background thread (with free budget
// only, starting 100 ms later so as not to slow the stream that claimed e
// while it opens), so that a rank reaching e + 1 finds it ready. Orders older
// than (claimed epoch - 1) are dropped, so a job holds at most three orders:
// the previous one (some rank may still read or re-open it), the current one
// and the next; ReleaseBefore() (a commit reached a new epoch) drops all
// older ones and prepares what follows. Streams still reading a
// dropped order keep it alive through their shared_ptr. Forget() drops a
// deleted job's orders and its queued preparations. A dropped order nobody
// holds is freed by the background thread, outside every lock (the
// caller's included); only an eviction to make room for a claim frees its
// order at once, as the claim needs the bytes.
//
// Memory budget: every order counts against `budget_bytes` from the moment
// its computation is reserved until its last holder (the cache or a stream)
// lets it go. A claim that does not fit first evicts cached orders nobody
// holds, least recently claimed first; if it still does not fit, the claim
// waits for memory to be released (Await: until its deadline; WhenReady:
// until the deadline given to it) and then fails with RESOURCE_EXHAUSTED
// naming the budget; an order larger than the whole budget fails at once.
// Waiting claims are woken when an order's bytes are released and when a
// holder lets an order go (it may be evictable then).
// Preparations (next epochs, Prepare) only use free budget and never
// evict. Thread-safety: all methods are thread-safe. Stop() (also run by the
// destructor) ends the background thread; Get() keeps working without it.
#ifndef SERVER_PLANS_EPOCH_ORDER_CACHE_H_
#define SERVER_PLANS_EPOCH_ORDER_CACHE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/plan/orders/epoch_order.h"
#include "common/sync/watermark.h"
#include "server/runtime/work_pool.h"
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
    // Null for orders that hold no memory (identity, keyed): built in Await;
    // and while over_budget_: no memory could be reserved at claim time.
    std::shared_ptr<Slot> slot_;
    bool compute_here_ = false;
    bool over_budget_ = false;
  };

  using Order = std::shared_ptr<const plan::EpochOrder>;
  using OrderCallback = absl::AnyInvocable<void(absl::StatusOr<Order>) &&>;

  // Orders up to this size are computed on the thread that needs them.
  static constexpr uint64_t kInlineOrderBytes = uint64_t{4} << 20;

  static constexpr uint64_t kUnlimited = UINT64_MAX;

  // `compute_threads` compute the rests of the orders above
  // kInlineOrderBytes (one more thread their fronts); all orders together
  // hold at most `budget_bytes`.
  explicit EpochOrderCache(int compute_threads = 2,
                           uint64_t budget_bytes = kUnlimited);
  ~EpochOrderCache();
  EpochOrderCache(const EpochOrderCache&) = delete;
  EpochOrderCache& operator=(const EpochOrderCache&) = delete;

  // Reserves the order of `epoch` for the job with this (normalised,
  // immutable) spec and queues the next epoch's preparation. Never blocks on
  // a computation.
  Claim ClaimOrder(const JobIncarnation& job, const shard::v1::JobSpec& spec,
                   uint64_t epoch) ABSL_LOCKS_EXCLUDED(mu_);
  // The claimed order, finished: computed here if nobody started it, else
  // waited for. DEADLINE_EXCEEDED if another thread's computation is not
  // done by `deadline`; RESOURCE_EXHAUSTED if the order cannot be allocated
  // or does not fit in the budget by `deadline`; UNAVAILABLE if its
  // preparation was abandoned by Stop().
  absl::StatusOr<std::shared_ptr<const plan::EpochOrder>> Await(
      Claim claim, absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);
  // Calls `done` with the claimed order (or RESOURCE_EXHAUSTED) once it is
  // allocated, possibly before it is shuffled (read its final entries and
  // wait for the rest with EpochOrder::progress): at once on this thread if
  // it is (computing a small order here first), else on the thread that
  // allocates it, or that finds memory for it (RESOURCE_EXHAUSTED if none
  // is found by `deadline`). Never blocks on another computation; `done`
  // must be cheap.
  void WhenReady(Claim claim, OrderCallback done,
                 absl::Time deadline = absl::InfiniteFuture())
      ABSL_LOCKS_EXCLUDED(mu_);
  // ClaimOrder + Await.
  absl::StatusOr<std::shared_ptr<const plan::EpochOrder>> Get(
      const JobIncarnation& job, const shard::v1::JobSpec& spec, uint64_t epoch,
      absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);

  // Computes the order of `epoch` in the background unless it is cached or
  // queued already: for a job just created, or recovered with members, so
  // that its trainers find the order ready when they open their streams.
  void Prepare(const JobIncarnation& job, const shard::v1::JobSpec& spec,
               uint64_t epoch) ABSL_LOCKS_EXCLUDED(mu_);

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
  // Bytes of orders being computed or alive (cached or held by streams).
  uint64_t bytes() const;
  uint64_t budget_bytes() const { return budget_->limit; }
  // Cached orders evicted to make room for a claim, since the start.
  uint64_t evictions() const ABSL_LOCKS_EXCLUDED(mu_);

  // Preparations Stop() cut short, since the start.
  uint64_t computations_cancelled() const ABSL_LOCKS_EXCLUDED(mu_);

  // Stops the prefetch thread; pending prefetches are dropped and the one
  // being computed is abandoned within about a million shuffle steps (its
  // waiters get UNAVAILABLE), so that stopping never waits for a large
  // shuffle. Orders asked for afterwards are still computed.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Key = std::pair<uint64_t, uint64_t>;  // (incarnation, epoch)
  // One cached order. `order` is null while computing; `failed` is set when
  // the computation threw (the slot is then removed from the map).
  struct Slot {
    std::shared_ptr<const plan::EpochOrder> order;
    bool failed = false;
    // Bytes reserved for the order (released by its deleter, or by Fill
    // when the computation fails).
    uint64_t bytes = 0;
    // When it was last claimed (the cache's tick), for LRU eviction.
    uint64_t last_used = 0;
    // Why it failed, once failed.
    absl::Status error;
    // 1 once `order` is published, broken with `error` if it failed
    // before: what Await() and WhenReady() wait for.
    sync::Watermark allocated;
  };
  // The byte count all orders share; outlives the cache (orders held by
  // streams release into it), hence its own lock and shared ownership.
  struct Budget {
    explicit Budget(uint64_t limit_bytes) : limit(limit_bytes) {}
    bool TryReserve(uint64_t bytes) ABSL_LOCKS_EXCLUDED(mu);
    void Release(uint64_t bytes) ABSL_LOCKS_EXCLUDED(mu);
    // Counts a change that may let a waiting claim proceed without a
    // release (a holder let an order go, so it may be evicted) or that
    // gives the background thread work.
    void Poke() ABSL_LOCKS_EXCLUDED(mu);
    // Releases and pokes so far.
    uint64_t Changes() const ABSL_LOCKS_EXCLUDED(mu);
    // Returns once Changes() differs from `seen`, or at `until`.
    void AwaitChange(uint64_t seen, absl::Time until) ABSL_LOCKS_EXCLUDED(mu);
    uint64_t Used() const ABSL_LOCKS_EXCLUDED(mu);

    const uint64_t limit;
    mutable absl::Mutex mu;  // Taken after the cache's mu_, never before.
    uint64_t used ABSL_GUARDED_BY(mu) = 0;
    uint64_t changes ABSL_GUARDED_BY(mu) = 0;
  };
  // The deleter of an order handed out to a caller: drops the caller's
  // share of the cached order, then pokes the budget (the order may be
  // evictable now). Every holder outside the cache holds one of these.
  struct HolderDone {
    std::shared_ptr<const plan::EpochOrder> order;
    std::shared_ptr<Budget> budget;
    void operator()(const plan::EpochOrder*);
  };
  // `order` as handed out to a caller (see HolderDone).
  Order HandOut(const std::shared_ptr<const plan::EpochOrder>& order) const {
    return Order(order.get(), HolderDone{order, budget_});
  }
  // A WhenReady() claim waiting for memory.
  struct MemoryWaiter {
    Claim claim;
    OrderCallback done;
    absl::Time deadline;
  };
  struct Prefetch {
    JobIncarnation job;
    shard::v1::JobSpec spec;
    uint64_t epoch;
    // Not started before (a claim's next epoch waits a little).
    absl::Time not_before = absl::InfinitePast();
  };

  // A new slot for `key` with `bytes` reserved, evicting idle orders if
  // `may_evict`; null when the budget cannot hold it.
  std::shared_ptr<Slot> NewSlot(const Key& key, uint64_t bytes, bool may_evict)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Evicts the least recently claimed order that only the cache holds;
  // false when there is none.
  bool EvictIdleOrder() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Gives an over-budget claim a slot (an existing one, or a new one
  // reserved now); false if the budget still cannot hold it.
  bool PlaceOverBudgetClaim(Claim& claim) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The error of a claim that found no memory.
  absl::Status OverBudget(const Claim& claim) const;
  // Retries the WhenReady() claims waiting for memory; returns what to run
  // for them outside the lock (an answer, or the wait for the allocation).
  std::vector<absl::AnyInvocable<void() &&>> ServeMemoryWaiters()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Calls `done` with the slot's outcome once its order is allocated (or
  // failed): at once if it is. Call it without mu_.
  void WhenAllocated(const std::shared_ptr<Slot>& slot, OrderCallback done)
      ABSL_LOCKS_EXCLUDED(mu_);

  // An order published and started (Start), not finished yet.
  struct Building {
    Key key;
    std::shared_ptr<Slot> slot;
    std::shared_ptr<plan::EpochOrder> order;
  };
  // Start + Finish on this thread.
  void Fill(const Key& key, const std::shared_ptr<Slot>& slot,
            const shard::v1::JobSpec& spec) ABSL_LOCKS_EXCLUDED(mu_);
  // Start on a front thread, then Finish on a compute thread. Only
  // queues work: may be called with mu_ held.
  void FillOnComputeThreads(const Key& key, const std::shared_ptr<Slot>& slot,
                            const shard::v1::JobSpec& spec);
  // Allocates the slot's order outside the lock, publishes it (running the
  // callbacks waiting for it) and shuffles its front (its first entries are
  // final within about a millisecond; readers follow the rest through
  // EpochOrder::progress). Nullopt if it cannot be allocated (the slot
  // failed with RESOURCE_EXHAUSTED).
  std::optional<Building> Start(const Key& key,
                                const std::shared_ptr<Slot>& slot,
                                const shard::v1::JobSpec& spec)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Shuffles the rest. A `background` one (a preparation) is abandoned
  // when Stop() is called meanwhile.
  void Finish(const Building& building, bool background)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The slot leaves the cache and the order's readers get UNAVAILABLE.
  void Abandon(const Building& building) ABSL_LOCKS_EXCLUDED(mu_);
  // The slot's outcome once allocated: the order (which may still be
  // being shuffled) or the slot's error.
  absl::StatusOr<Order> Outcome(const Slot& slot) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The slot failed with `error` (not OK): it leaves the cache and its
  // waiting callbacks get the error.
  void Fail(const Key& key, const std::shared_ptr<Slot>& slot,
            const absl::Status& error) ABSL_LOCKS_EXCLUDED(mu_);
  // DEADLINE_EXCEEDED for a claim whose order was not ready in time.
  static absl::Status StillComputing(const Claim& claim);
  using Slots = std::map<Key, std::shared_ptr<Slot>>;
  void EvictOlderThan(uint64_t incarnation, uint64_t epoch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the slots in [first, last) out of the cache; the background
  // thread frees their orders (up to gigabytes each, when nothing else
  // holds them) outside every lock, the caller's included.
  void Retire(Slots::iterator first, Slots::iterator last)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // When the first queued preparation may start (InfiniteFuture: none).
  absl::Time NextPreparationDue() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the first queued preparation that may start now, if any.
  std::optional<Prefetch> TakeDuePreparation()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits until the background thread has work (or claims waiting for
  // memory should look again); returns with mu_ held.
  void AwaitBackgroundWork() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PrefetchLoop() ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  // Slot contents are guarded by mu_ as well.
  Slots slots_ ABSL_GUARDED_BY(mu_);
  // Slots taken out of the cache, for the background thread to free.
  std::vector<std::shared_ptr<Slot>> retired_ ABSL_GUARDED_BY(mu_);
  std::deque<Prefetch> prefetch_queue_ ABSL_GUARDED_BY(mu_);
  // Preparations started, for the background thread to finish once no
  // other preparation waits for its start.
  std::deque<Building> unfinished_ ABSL_GUARDED_BY(mu_);
  std::deque<MemoryWaiter> memory_waiters_ ABSL_GUARDED_BY(mu_);
  bool new_memory_waiter_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t tick_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t evictions_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t computations_cancelled_ ABSL_GUARDED_BY(mu_) = 0;
  // Set by Stop(); read by the shuffles in progress.
  std::atomic<bool> cancel_computations_{false};
  const std::shared_ptr<Budget> budget_;
  // Rests of claimed orders.
  WorkPool compute_;
  // Fronts of claimed orders; never a rest. Destroyed before compute_, on
  // which its tasks queue the rests.
  WorkPool fronts_{2};
  std::thread prefetch_thread_;
};

}  // namespace shard::server

#endif  // SERVER_PLANS_EPOCH_ORDER_CACHE_H_
