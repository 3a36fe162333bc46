#include "common/plan/epoch_order.h"

namespace shard::plan {

EpochOrder EpochOrder::Identity(uint64_t n) { return EpochOrder(n); }

EpochOrder EpochOrder::TorchShuffled(uint64_t n, uint64_t seed,
                                     RandpermVariant variant,
                                     const std::atomic<bool>* cancelled) {
  EpochOrder order(n);
  if (n <= (uint64_t{1} << 32)) {
    order.narrow_.resize(n);
    TorchRandperm<uint32_t>(seed, variant, absl::MakeSpan(order.narrow_),
                            cancelled);
  } else {
    order.wide_.resize(n);
    TorchRandperm<uint64_t>(seed, variant, absl::MakeSpan(order.wide_),
                            cancelled);
  }
  return order;
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
