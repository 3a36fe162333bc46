#include "server/plan/epoch_order.h"

namespace shard::plan {

EpochOrder EpochOrder::Identity(uint64_t n) { return EpochOrder(n); }

EpochOrder EpochOrder::TorchShuffled(uint64_t n, uint64_t seed,
                                     RandpermVariant variant) {
  EpochOrder order(n);
  if (n <= (uint64_t{1} << 32)) {
    order.narrow_.resize(n);
    TorchRandperm<uint32_t>(seed, variant, absl::MakeSpan(order.narrow_));
  } else {
    order.wide_.resize(n);
    TorchRandperm<uint64_t>(seed, variant, absl::MakeSpan(order.wide_));
  }
  return order;
}

}  // namespace shard::plan
