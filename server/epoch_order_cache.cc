#include "server/epoch_order_cache.h"

#include <algorithm>
#include <new>

#include "absl/strings/str_cat.h"
#include "common/plan/job_spec.h"

namespace shard::server {

EpochOrderCache::EpochOrderCache(int compute_threads)
    : compute_(compute_threads), prefetch_thread_([this] { PrefetchLoop(); }) {}

EpochOrderCache::~EpochOrderCache() { Stop(); }

void EpochOrderCache::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    prefetch_queue_.clear();
  }
  if (prefetch_thread_.joinable()) prefetch_thread_.join();
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
  std::shared_ptr<Slot>& entry = slots_[key];
  if (entry == nullptr) {
    entry = std::make_shared<Slot>();
    if (plan::EpochOrderBytes(spec) <= kInlineOrderBytes) {
      claim.compute_here_ = true;
    } else {
      compute_.Schedule(
          [this, key, slot = entry, spec] { Fill(key, slot, spec); });
    }
  }
  claim.slot_ = entry;
  EvictOlderThan(job.incarnation, epoch == 0 ? 0 : epoch - 1);
  const bool older_cached =
      slots_.lower_bound(Key(job.incarnation, 0)) != slots_.lower_bound(key);
  if (!stopping_ && epoch < plan::kMaxEpoch && !older_cached) {
    prefetch_queue_.push_back({job, spec, epoch + 1});
  }
  return claim;
}

absl::StatusOr<std::shared_ptr<const plan::EpochOrder>> EpochOrderCache::Await(
    Claim claim, absl::Time deadline) {
  if (claim.slot_ == nullptr) {
    return std::make_shared<const plan::EpochOrder>(
        plan::BuildEpochOrder(claim.spec_, claim.epoch_));
  }
  const std::shared_ptr<Slot>& slot = claim.slot_;
  if (claim.compute_here_) {
    Fill(Key(claim.job_.incarnation, claim.epoch_), slot, claim.spec_);
  }
  absl::MutexLock lock(&mu_);
  auto done = [&slot]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return slot->order != nullptr || slot->failed;
  };
  if (!mu_.AwaitWithDeadline(absl::Condition(&done), deadline)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "epoch ", claim.epoch_, " order of job ", claim.job_.job_id,
        " was still being computed at the call's deadline"));
  }
  return Outcome(claim, *slot);
}

absl::StatusOr<EpochOrderCache::Order> EpochOrderCache::Outcome(
    const Claim& claim, const Slot& slot) {
  if (slot.failed) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot allocate the epoch order of job ", claim.job_.job_id, " (",
        plan::EpochOrderBytes(claim.spec_), " bytes)"));
  }
  return slot.order;
}

void EpochOrderCache::WhenReady(Claim claim, OrderCallback done) {
  if (claim.slot_ == nullptr || claim.compute_here_) {
    std::move(done)(Await(std::move(claim), absl::InfiniteFuture()));
    return;
  }
  std::shared_ptr<Slot> slot = claim.slot_;
  {
    absl::MutexLock lock(&mu_);
    if (slot->order == nullptr && !slot->failed) {
      slot->waiting.push_back(std::move(done));
      return;
    }
  }
  std::move(done)(Outcome(claim, *slot));
}

absl::StatusOr<std::shared_ptr<const plan::EpochOrder>> EpochOrderCache::Get(
    const JobIncarnation& job, const shard::v1::JobSpec& spec, uint64_t epoch,
    absl::Time deadline) {
  return Await(ClaimOrder(job, spec, epoch), deadline);
}

void EpochOrderCache::Fill(const Key& key, const std::shared_ptr<Slot>& slot,
                           const shard::v1::JobSpec& spec) {
  std::shared_ptr<const plan::EpochOrder> order;
  try {
    order = std::make_shared<const plan::EpochOrder>(
        plan::BuildEpochOrder(spec, key.second));
  } catch (const std::bad_alloc&) {
    order = nullptr;
  }
  std::vector<OrderCallback> waiting;
  absl::StatusOr<Order> outcome;
  {
    absl::MutexLock lock(&mu_);
    if (order == nullptr) {
      slot->failed = true;
      auto it = slots_.find(key);
      if (it != slots_.end() && it->second == slot) slots_.erase(it);
      outcome = absl::ResourceExhaustedError(
          absl::StrCat("cannot allocate the order of epoch ", key.second, " (",
                       plan::EpochOrderBytes(spec), " bytes)"));
    } else {
      slot->order = std::move(order);
      outcome = slot->order;
    }
    waiting.swap(slot->waiting);
  }
  for (OrderCallback& callback : waiting) std::move(callback)(outcome);
}

void EpochOrderCache::Prepare(const JobIncarnation& job,
                              const shard::v1::JobSpec& spec, uint64_t epoch) {
  if (plan::EpochOrderBytes(spec) == 0) return;
  absl::MutexLock lock(&mu_);
  if (stopping_) return;
  prefetch_queue_.push_back({job, spec, epoch});
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
}

void EpochOrderCache::Forget(uint64_t incarnation) {
  absl::MutexLock lock(&mu_);
  slots_.erase(slots_.lower_bound(Key(incarnation, 0)),
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
  slots_.erase(slots_.lower_bound(Key(incarnation, 0)),
               slots_.lower_bound(Key(incarnation, epoch)));
}

void EpochOrderCache::PrefetchLoop() {
  while (true) {
    Prefetch next;
    std::shared_ptr<Slot> slot;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !prefetch_queue_.empty();
      };
      mu_.Await(absl::Condition(&has_work));
      if (stopping_) return;
      next = std::move(prefetch_queue_.front());
      prefetch_queue_.pop_front();
      std::shared_ptr<Slot>& entry =
          slots_[Key(next.job.incarnation, next.epoch)];
      if (entry != nullptr) continue;  // Already cached or being computed.
      entry = std::make_shared<Slot>();
      slot = entry;
    }
    Fill(Key(next.job.incarnation, next.epoch), slot, next.spec);
  }
}

}  // namespace shard::server
