#include "common/plan/orders/epoch_order.h"

#include <algorithm>

namespace shard::plan {

EpochOrder EpochOrder::Identity(uint64_t n) { return EpochOrder(n); }

EpochOrder EpochOrder::TorchShuffled(uint64_t n, uint64_t seed,
                                     RandpermVariant variant,
                                     const std::atomic<bool>* cancelled) {
  EpochOrder order = PendingTorchShuffle(n, seed, variant);
  order.Shuffle(cancelled);
  return order;
}

namespace {

// Sizes `entries` to n entries that read as zero: fresh mappings are zero
// already; smaller blocks are cleared.
template <typename Index>
void ResizeZeroed(std::vector<Index, OrderAllocator<Index>>& entries,
                  uint64_t n) {
  entries.resize(n);
  if (!OrderAllocator<Index>::ZeroFilled(n)) {
    std::fill(entries.begin(), entries.end(), Index{0});
  }
}

}  // namespace

EpochOrder EpochOrder::PendingTorchShuffle(uint64_t n, uint64_t seed,
                                           RandpermVariant variant) {
  EpochOrder order(n);
  order.progress_ = std::make_unique<OrderProgress>(n);
  if (n <= (uint64_t{1} << 32)) {
    ResizeZeroed(order.narrow_, n);
    order.pending_ = StartTorchRandperm<uint32_t>(
        seed, variant, absl::MakeSpan(order.narrow_), order.progress_.get());
  } else {
    ResizeZeroed(order.wide_, n);
    order.pending_ = StartTorchRandperm<uint64_t>(
        seed, variant, absl::MakeSpan(order.wide_), order.progress_.get());
  }
  return order;
}

void EpochOrder::ShuffleFront() {
  if (pending_ != nullptr) pending_->Front();
}

bool EpochOrder::Shuffle(const std::atomic<bool>* cancelled) {
  if (pending_ == nullptr) return true;
  if (!pending_->Rest(cancelled)) return false;
  pending_.reset();  // Frees the shuffle's state.
  return true;
}

EpochOrder EpochOrder::Feistel(uint64_t n, uint64_t key) {
  EpochOrder order(n);
  order.feistel_.emplace(n, key);
  return order;
}

EpochOrder EpochOrder::Blocks(uint64_t n, uint64_t block_size,
                              uint64_t window_blocks, uint64_t key) {
  EpochOrder order(n);
  order.blocks_.emplace(n, block_size, window_blocks, key);
  return order;
}

}  // namespace shard::plan
