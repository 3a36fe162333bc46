#include "server/plans/epoch_order_cache.h"

#include <algorithm>
#include <new>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/plan/spec/job_spec.h"

namespace shard::server {

namespace {
// Claims waiting for memory are woken by every release and by every holder
// letting an order go (which may make it evictable); they also look again
// this often, for the one change that wakes nobody: a claim dropped without
// being awaited.
constexpr absl::Duration kMemoryRecheck = absl::Seconds(1);
// A claim of epoch e prepares e + 1 this much later, so that the work (a
// large order's allocation and first steps) does not compete with the
// stream that claimed e while it opens.
constexpr absl::Duration kNextEpochDelay = absl::Milliseconds(100);
// The compute threads' CPU priority below the threads serving calls: a
// rest takes seconds of CPU and must not slow joins, commits, other
// orders' fronts or the streams it feeds.
constexpr int kRestNice = 10;
}  // namespace

bool EpochOrderCache::Budget::TryReserve(uint64_t bytes) {
  absl::MutexLock lock(&mu);
  if (bytes > limit || used > limit - bytes) return false;
  used += bytes;
  return true;
}

void EpochOrderCache::Budget::Release(uint64_t bytes) {
  absl::MutexLock lock(&mu);
  used -= bytes;
  ++changes;
}

void EpochOrderCache::Budget::Poke() {
  absl::MutexLock lock(&mu);
  ++changes;
}

uint64_t EpochOrderCache::Budget::Changes() const {
  absl::MutexLock lock(&mu);
  return changes;
}

void EpochOrderCache::Budget::AwaitChange(uint64_t seen, absl::Time until) {
  absl::MutexLock lock(&mu);
  auto changed = [this, seen]()
                     ABSL_NO_THREAD_SAFETY_ANALYSIS { return changes != seen; };
  mu.AwaitWithDeadline(absl::Condition(&changed), until);
}

void EpochOrderCache::HolderDone::operator()(const plan::EpochOrder*) {
  order.reset();  // The cache's copy may be the last one now: evictable.
  budget->Poke();
}

uint64_t EpochOrderCache::computations_cancelled() const {
  absl::MutexLock lock(&mu_);
  return computations_cancelled_;
}

uint64_t EpochOrderCache::Budget::Used() const {
  absl::MutexLock lock(&mu);
  return used;
}

EpochOrderCache::EpochOrderCache(int compute_threads, uint64_t budget_bytes)
    : budget_(std::make_shared<Budget>(budget_bytes)),
      compute_(compute_threads, kRestNice),
      prefetch_thread_([this] { PrefetchLoop(); }) {}

EpochOrderCache::~EpochOrderCache() { Stop(); }

void EpochOrderCache::Stop() {
  cancel_computations_.store(true);
  std::deque<MemoryWaiter> waiters;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    prefetch_queue_.clear();
    waiters.swap(memory_waiters_);
    budget_->Poke();  // Wakes the background thread.
  }
  if (prefetch_thread_.joinable()) prefetch_thread_.join();
  std::deque<Building> unfinished;
  {
    absl::MutexLock lock(&mu_);
    unfinished.swap(unfinished_);
  }
  for (const Building& building : unfinished) Abandon(building);
  for (MemoryWaiter& waiter : waiters) {
    std::move(waiter.done)(OverBudget(waiter.claim));
  }
}

EpochOrderCache::Claim EpochOrderCache::ClaimOrder(
    const JobIncarnation& job, const shard::v1::JobSpec& spec, uint64_t epoch) {
  Claim claim;
  claim.job_ = job;
  claim.spec_ = spec;
  claim.epoch_ = epoch;
  if (plan::EpochOrderBytes(spec) == 0) {
    // Identity and keyed orders hold no memory: nothing to share or prepare.
    return claim;
  }
  const Key key(job.incarnation, epoch);
  absl::MutexLock lock(&mu_);
  EvictOlderThan(job.incarnation, epoch == 0 ? 0 : epoch - 1);
  auto found = slots_.find(key);
  if (found != slots_.end()) {
    claim.slot_ = found->second;
    claim.slot_->last_used = ++tick_;
  } else if (std::shared_ptr<Slot> slot = NewSlot(
                 key, plan::EpochOrderBytes(spec), /*may_evict=*/true)) {
    claim.slot_ = slot;
    if (slot->bytes <= kInlineOrderBytes) {
      claim.compute_here_ = true;
    } else {
      FillOnComputeThreads(key, slot, spec);
    }
  } else {
    claim.over_budget_ = true;  // Await / WhenReady wait for memory.
  }
  // The next epoch is prepared whenever an epoch is claimed, also while the
  // previous one is still cached for ranks that read it: with free budget
  // only, so it never pushes out an order in use.
  if (!stopping_ && epoch < plan::kMaxEpoch &&
      slots_.count(Key(job.incarnation, epoch + 1)) == 0) {
    prefetch_queue_.push_back(
        {job, spec, epoch + 1, absl::Now() + kNextEpochDelay});
    budget_->Poke();
  }
  return claim;
}

absl::StatusOr<std::shared_ptr<const plan::EpochOrder>> EpochOrderCache::Await(
    Claim claim, absl::Time deadline) {
  while (claim.over_budget_) {
    // Read before trying, so that a change right after the try wakes us.
    const uint64_t seen = budget_->Changes();
    {
      absl::MutexLock lock(&mu_);
      if (PlaceOverBudgetClaim(claim)) break;
    }
    if (plan::EpochOrderBytes(claim.spec_) > budget_->limit ||
        absl::Now() >= deadline) {
      return OverBudget(claim);
    }
    budget_->AwaitChange(seen,
                         std::min(deadline, absl::Now() + kMemoryRecheck));
  }
  if (claim.slot_ == nullptr) {
    return std::make_shared<const plan::EpochOrder>(
        plan::BuildEpochOrder(claim.spec_, claim.epoch_));
  }
  const std::shared_ptr<Slot>& slot = claim.slot_;
  if (claim.compute_here_) {
    Fill(Key(claim.job_.incarnation, claim.epoch_), slot, claim.spec_);
  }
  if (absl::IsDeadlineExceeded(slot->allocated.AwaitReached(1, deadline))) {
    return StillComputing(claim);
  }
  absl::StatusOr<Order> order;
  {
    absl::MutexLock lock(&mu_);
    order = Outcome(*slot);
  }
  if (!order.ok()) return order;
  // Published before it is shuffled: wait for its last entry.
  plan::OrderProgress* progress = (*order)->progress();
  if (progress != nullptr && !progress->Done()) {
    const absl::Status built =
        progress->AwaitFinal(progress->size() - 1, deadline);
    if (built.code() == absl::StatusCode::kDeadlineExceeded) {
      return StillComputing(claim);
    }
    if (!built.ok()) return built;
  }
  return order;
}

absl::Status EpochOrderCache::StillComputing(const Claim& claim) {
  return absl::DeadlineExceededError(
      absl::StrCat("epoch ", claim.epoch_, " order of job ", claim.job_.job_id,
                   " was still being computed at the call's deadline"));
}

absl::StatusOr<EpochOrderCache::Order> EpochOrderCache::Outcome(
    const Slot& slot) const {
  if (slot.failed) return slot.error;
  return HandOut(slot.order);
}

void EpochOrderCache::WhenReady(Claim claim, OrderCallback done,
                                absl::Time deadline) {
  if (claim.over_budget_) {
    absl::ReleasableMutexLock lock(&mu_);
    if (!PlaceOverBudgetClaim(claim)) {
      if (plan::EpochOrderBytes(claim.spec_) > budget_->limit || stopping_) {
        lock.Release();
        std::move(done)(OverBudget(claim));
        return;
      }
      memory_waiters_.push_back({std::move(claim), std::move(done), deadline});
      new_memory_waiter_ = true;
      budget_->Poke();  // Wakes the background thread.
      return;
    }
  }
  if (claim.slot_ == nullptr || claim.compute_here_) {
    std::move(done)(Await(std::move(claim), absl::InfiniteFuture()));
    return;
  }
  WhenAllocated(claim.slot_, std::move(done));
}

void EpochOrderCache::WhenAllocated(const std::shared_ptr<Slot>& slot,
                                    OrderCallback done) {
  slot->allocated.WhenReached(
      1, [this, slot, done = std::move(done)](absl::Status allocated) mutable {
        if (!allocated.ok()) return std::move(done)(std::move(allocated));
        absl::StatusOr<Order> outcome;
        {
          absl::MutexLock lock(&mu_);
          outcome = Outcome(*slot);  // It may have failed since.
        }
        std::move(done)(std::move(outcome));
      });
}

absl::StatusOr<std::shared_ptr<const plan::EpochOrder>> EpochOrderCache::Get(
    const JobIncarnation& job, const shard::v1::JobSpec& spec, uint64_t epoch,
    absl::Time deadline) {
  return Await(ClaimOrder(job, spec, epoch), deadline);
}

void EpochOrderCache::Fill(const Key& key, const std::shared_ptr<Slot>& slot,
                           const shard::v1::JobSpec& spec) {
  if (std::optional<Building> building = Start(key, slot, spec)) {
    Finish(*building, /*background=*/false);
  }
}

void EpochOrderCache::FillOnComputeThreads(const Key& key,
                                           const std::shared_ptr<Slot>& slot,
                                           const shard::v1::JobSpec& spec) {
  fronts_.Schedule([this, key, slot, spec] {
    if (std::optional<Building> building = Start(key, slot, spec)) {
      compute_.Schedule([this, building = *std::move(building)] {
        Finish(building, /*background=*/false);
      });
    }
  });
}

std::optional<EpochOrderCache::Building> EpochOrderCache::Start(
    const Key& key, const std::shared_ptr<Slot>& slot,
    const shard::v1::JobSpec& spec) {
  std::shared_ptr<plan::EpochOrder> order;
  try {
    // The order gives its reserved bytes back when its last holder (the
    // cache or a stream) lets it go.
    order = std::shared_ptr<plan::EpochOrder>(
        new plan::EpochOrder(plan::StartEpochOrder(spec, key.second)),
        [budget = budget_, bytes = slot->bytes](const plan::EpochOrder* o) {
          delete o;
          budget->Release(bytes);
        });
  } catch (const std::bad_alloc&) {
    budget_->Release(slot->bytes);
    Fail(key, slot,
         absl::ResourceExhaustedError(
             absl::StrCat("cannot allocate the order of epoch ", key.second,
                          " (", plan::EpochOrderBytes(spec), " bytes)")));
    return std::nullopt;
  }
  // Published before it is shuffled: readers take the entries final so far
  // and wait for the rest (EpochOrder::progress).
  {
    absl::MutexLock lock(&mu_);
    slot->order = order;
  }
  slot->allocated.Advance(1);  // Runs the WhenReady() callbacks waiting.
  order->ShuffleFront();
  return Building{key, slot, std::move(order)};
}

void EpochOrderCache::Finish(const Building& building, bool background) {
  if (building.order->Shuffle(background ? &cancel_computations_ : nullptr)) {
    return;
  }
  Abandon(building);  // Stop() cut the shuffle short.
}

void EpochOrderCache::Abandon(const Building& building) {
  const absl::Status abandoned = absl::UnavailableError(
      absl::StrCat("the order of epoch ", building.key.second,
                   " was abandoned: the coordinator is stopping"));
  Fail(building.key, building.slot, abandoned);
  building.order->progress()->Abandon(abandoned);
}

void EpochOrderCache::Fail(const Key& key, const std::shared_ptr<Slot>& slot,
                           const absl::Status& error) {
  {
    absl::MutexLock lock(&mu_);
    if (error.code() == absl::StatusCode::kUnavailable) {
      ++computations_cancelled_;
    }
    slot->failed = true;
    slot->error = error;
    auto it = slots_.find(key);
    if (it != slots_.end() && it->second == slot) slots_.erase(it);
  }
  slot->allocated.Break(error);  // Runs the WhenReady() callbacks waiting.
}

void EpochOrderCache::Prepare(const JobIncarnation& job,
                              const shard::v1::JobSpec& spec, uint64_t epoch) {
  if (plan::EpochOrderBytes(spec) == 0) return;
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  prefetch_queue_.push_back({job, spec, epoch});
  budget_->Poke();
}

void EpochOrderCache::ReleaseBefore(const JobIncarnation& job,
                                    const shard::v1::JobSpec& spec,
                                    uint64_t epoch) {
  if (plan::EpochOrderBytes(spec) == 0) return;
  absl::MutexLock lock(&mu_);
  EvictOlderThan(job.incarnation, epoch);
  if (stopping_) return;
  prefetch_queue_.push_back({job, spec, epoch});
  if (epoch < plan::kMaxEpoch)
    prefetch_queue_.push_back({job, spec, epoch + 1});
  budget_->Poke();
}

void EpochOrderCache::Forget(uint64_t incarnation) {
  absl::MutexLock lock(&mu_);
  Retire(slots_.lower_bound(Key(incarnation, 0)),
         slots_.upper_bound(Key(incarnation, UINT64_MAX)));
  prefetch_queue_.erase(
      std::remove_if(prefetch_queue_.begin(), prefetch_queue_.end(),
                     [incarnation](const Prefetch& prefetch) {
                       return prefetch.job.incarnation == incarnation;
                     }),
      prefetch_queue_.end());
}

size_t EpochOrderCache::size() const {
  absl::MutexLock lock(&mu_);
  return slots_.size();
}

size_t EpochOrderCache::queued() const {
  absl::MutexLock lock(&mu_);
  return prefetch_queue_.size();
}

void EpochOrderCache::EvictOlderThan(uint64_t incarnation, uint64_t epoch) {
  Retire(slots_.lower_bound(Key(incarnation, 0)),
         slots_.lower_bound(Key(incarnation, epoch)));
}

void EpochOrderCache::Retire(Slots::iterator first, Slots::iterator last) {
  if (first == last) return;
  for (auto it = first; it != last; ++it) retired_.push_back(it->second);
  slots_.erase(first, last);
  budget_->Poke();  // Wakes the background thread, which frees them.
}

absl::Time EpochOrderCache::NextPreparationDue() const {
  absl::Time due = absl::InfiniteFuture();
  for (const Prefetch& prefetch : prefetch_queue_) {
    due = std::min(due, prefetch.not_before);
  }
  return due;
}

std::optional<EpochOrderCache::Prefetch> EpochOrderCache::TakeDuePreparation() {
  const absl::Time now = absl::Now();
  for (auto it = prefetch_queue_.begin(); it != prefetch_queue_.end(); ++it) {
    if (it->not_before <= now) {
      Prefetch due = std::move(*it);
      prefetch_queue_.erase(it);
      return due;
    }
  }
  return std::nullopt;
}

void EpochOrderCache::AwaitBackgroundWork() {
  absl::Time until = NextPreparationDue();
  // Work, or a preparation queued meanwhile that is due before `until`.
  auto has_work = [this, &until]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const absl::Time due = NextPreparationDue();
    return stopping_ || due <= absl::Now() || due < until ||
           new_memory_waiter_ || !retired_.empty() || !unfinished_.empty();
  };
  if (has_work()) return;
  if (memory_waiters_.empty()) {
    mu_.AwaitWithDeadline(absl::Condition(&has_work), until);
    return;
  }
  // Claims wait for memory: sleep on the budget, which every release, every
  // order let go and every new piece of work (Poke) changes, until the first
  // waiter's deadline. The count is read before unlocking, so nothing in
  // between is missed.
  const uint64_t seen = budget_->Changes();
  until = std::min(until, absl::Now() + kMemoryRecheck);
  for (const MemoryWaiter& waiter : memory_waiters_) {
    until = std::min(until, waiter.deadline);
  }
  mu_.Unlock();
  budget_->AwaitChange(seen, until);
  mu_.Lock();
}

void EpochOrderCache::PrefetchLoop() {
  while (true) {
    Prefetch next;
    std::shared_ptr<Slot> slot;
    std::optional<Building> finishing;
    std::vector<absl::AnyInvocable<void() &&>> answers;
    std::vector<std::shared_ptr<Slot>> freeing;
    {
      absl::MutexLock lock(&mu_);
      AwaitBackgroundWork();
      if (stopping_) return;
      freeing.swap(retired_);
      new_memory_waiter_ = false;
      answers = ServeMemoryWaiters();
      if (std::optional<Prefetch> due = TakeDuePreparation()) {
        next = *std::move(due);
        const Key key(next.job.incarnation, next.epoch);
        // Preparations use free budget only; they never evict.
        if (slots_.count(key) == 0) {
          slot = NewSlot(key, plan::EpochOrderBytes(next.spec),
                         /*may_evict=*/false);
        }
      } else if (!unfinished_.empty()) {
        // Every due preparation got its front first (after a restart,
        // every job's trainers can start before any order is finished).
        finishing = std::move(unfinished_.front());
        unfinished_.pop_front();
      }
    }
    // Orders only the cache held are freed here, outside every lock; their
    // bytes go back to the budget, which wakes claims waiting for memory.
    freeing.clear();
    for (auto& answer : answers) std::move(answer)();
    if (slot != nullptr) {
      std::optional<Building> started =
          Start(Key(next.job.incarnation, next.epoch), slot, next.spec);
      if (started.has_value() && slot->bytes <= kInlineOrderBytes) {
        Finish(*started, /*background=*/true);  // Cheap: done at once.
      } else if (started.has_value()) {
        absl::MutexLock lock(&mu_);
        unfinished_.push_back(*std::move(started));
      }
    }
    if (finishing.has_value()) Finish(*finishing, /*background=*/true);
  }
}

std::shared_ptr<EpochOrderCache::Slot> EpochOrderCache::NewSlot(
    const Key& key, uint64_t bytes, bool may_evict) {
  while (!budget_->TryReserve(bytes)) {
    if (!may_evict || bytes > budget_->limit || !EvictIdleOrder()) {
      return nullptr;
    }
  }
  auto slot = std::make_shared<Slot>();
  slot->bytes = bytes;
  slot->last_used = ++tick_;
  slots_[key] = slot;
  return slot;
}

bool EpochOrderCache::EvictIdleOrder() {
  auto victim = slots_.end();
  for (auto it = slots_.begin(); it != slots_.end(); ++it) {
    const std::shared_ptr<Slot>& slot = it->second;
    // Only the cache holds it: no claim in flight, no stream reading it.
    const bool idle = slot.use_count() == 1 && slot->order != nullptr &&
                      slot->order.use_count() == 1;
    if (idle && (victim == slots_.end() ||
                 slot->last_used < victim->second->last_used)) {
      victim = it;
    }
  }
  if (victim == slots_.end()) return false;
  slots_.erase(victim);  // The order's deleter releases its bytes.
  ++evictions_;
  return true;
}

bool EpochOrderCache::PlaceOverBudgetClaim(Claim& claim) {
  const Key key(claim.job_.incarnation, claim.epoch_);
  auto found = slots_.find(key);
  if (found != slots_.end()) {
    claim.slot_ = found->second;
  } else if (std::shared_ptr<Slot> slot = NewSlot(
                 key, plan::EpochOrderBytes(claim.spec_), /*may_evict=*/true)) {
    claim.slot_ = slot;
    FillOnComputeThreads(key, slot, claim.spec_);
  } else {
    return false;
  }
  claim.slot_->last_used = ++tick_;
  claim.over_budget_ = false;
  return true;
}

absl::Status EpochOrderCache::OverBudget(const Claim& claim) const {
  return absl::ResourceExhaustedError(
      absl::StrCat("the epoch ", claim.epoch_, " order of job ",
                   claim.job_.job_id, " (", plan::EpochOrderBytes(claim.spec_),
                   " bytes) does not fit in the order cache budget (shardd "
                   "--order-cache-bytes=",
                   budget_->limit, "; ", budget_->Used(),
                   " bytes are held by orders in use)"));
}

std::vector<absl::AnyInvocable<void() &&>>
EpochOrderCache::ServeMemoryWaiters() {
  std::vector<absl::AnyInvocable<void() &&>> answers;
  const absl::Time now = absl::Now();
  std::deque<MemoryWaiter> still_waiting;
  while (!memory_waiters_.empty()) {
    MemoryWaiter waiter = std::move(memory_waiters_.front());
    memory_waiters_.pop_front();
    if (PlaceOverBudgetClaim(waiter.claim)) {
      answers.push_back([this, slot = waiter.claim.slot_,
                         done = std::move(waiter.done)]() mutable {
        WhenAllocated(slot, std::move(done));
      });
    } else if (now >= waiter.deadline) {
      answers.push_back([done = std::move(waiter.done),
                         error = OverBudget(waiter.claim)]() mutable {
        std::move(done)(std::move(error));
      });
    } else {
      still_waiting.push_back(std::move(waiter));
    }
  }
  memory_waiters_.swap(still_waiting);
  return answers;
}

uint64_t EpochOrderCache::bytes() const { return budget_->Used(); }

uint64_t EpochOrderCache::evictions() const {
  absl::MutexLock lock(&mu_);
  return evictions_;
}

}  // namespace shard::server
