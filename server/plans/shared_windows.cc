#include "server/plans/shared_windows.h"

#include <algorithm>
#include <utility>

namespace shard::server {

SharedWindows::SharedWindows(uint32_t world_size, uint64_t max_bytes,
                             std::shared_ptr<std::atomic<uint64_t>> arranged,
                             OnFirstTaken on_first_taken)
    : world_size_(world_size),
      max_bytes_(max_bytes),
      arranged_(std::move(arranged)),
      on_first_taken_(std::move(on_first_taken)) {}

SharedWindows::Window SharedWindows::Take(
    uint64_t window, uint32_t rank,
    absl::FunctionRef<plan::WindowBatches()> arrange) {
  bool first = false;
  Window batches = TakeLocked(window, rank, arrange, first);
  if (first && on_first_taken_) on_first_taken_(window, *batches);
  return batches;
}

SharedWindows::Window SharedWindows::TakeLocked(
    uint64_t window, uint32_t rank,
    absl::FunctionRef<plan::WindowBatches()> arrange, bool& first) {
  absl::MutexLock lock(&mu_);
  asked_end_ = std::max(asked_end_, window + 1);
  while (true) {
    auto [entry, made] = kept_.try_emplace(window);
    if (made) {
      ArrangeInto(entry, arrange);
      Window batches = TakenBy(entry, rank, first);
      DropNewest();
      return batches;
    }
    if (entry->second.batches != nullptr) return TakenBy(entry, rank, first);
    // Another caller is arranging it: wait until it is kept (or, if that
    // arrangement failed, gone: then arrange it here).
    const auto settled = [this, window]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      auto found = kept_.find(window);  // mu_ is held: Await calls it so
      return found == kept_.end() || found->second.batches != nullptr;
    };
    mu_.Await(absl::Condition(&settled));
  }
}

void SharedWindows::ArrangeAhead(
    uint64_t window, absl::FunctionRef<plan::WindowBatches()> arrange) {
  absl::MutexLock lock(&mu_);
  if (window < asked_end_) return;  // the ranks arranged it or moved on
  auto [entry, made] = kept_.try_emplace(window);
  if (!made) return;
  ArrangeInto(entry, arrange);
  DropNewest();
}

void SharedWindows::ArrangeInto(
    Entry entry, absl::FunctionRef<plan::WindowBatches()> arrange) {
  Window arranged;
  mu_.Unlock();
  try {
    arranged = std::make_shared<const plan::WindowBatches>(arrange());
  } catch (...) {
    mu_.Lock();
    kept_.erase(entry);
    throw;
  }
  arranged_->fetch_add(1, std::memory_order_relaxed);
  mu_.Lock();
  entry->second.batches = std::move(arranged);
  entry->second.taken_by.assign(world_size_, false);
  kept_bytes_ += entry->second.batches->MemoryBytes();
}

void SharedWindows::DropNewest() {
  for (auto newest = kept_.end();
       kept_bytes_ > max_bytes_ && newest != kept_.begin();) {
    --newest;
    if (newest->second.batches == nullptr) continue;  // being arranged
    kept_bytes_ -= newest->second.batches->MemoryBytes();
    newest = kept_.erase(newest);
  }
}

SharedWindows::Window SharedWindows::TakenBy(Entry entry, uint32_t rank,
                                             bool& first) {
  Window batches = entry->second.batches;
  if (!entry->second.taken_by[rank]) {
    entry->second.taken_by[rank] = true;
    first = entry->second.takers == 0;
    if (++entry->second.takers == world_size_) {
      kept_bytes_ -= batches->MemoryBytes();
      kept_.erase(entry);
    }
  }
  return batches;
}

}  // namespace shard::server
