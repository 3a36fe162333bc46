// The global order of one epoch: a permutation of 0..N-1.
//
// Built once per (job, epoch) and shared read-only by every rank's stream.
// The identity order (shuffle off) stores nothing; a torch-shuffled order is
// kept with 32-bit entries when N <= 2^32 and 64-bit entries otherwise; the
// keyed (Feistel) and block shuffles compute each entry on demand and store
// nothing.
// Thread-safety: immutable after construction; concurrent reads are safe.
#ifndef COMMON_PLAN_EPOCH_ORDER_H_
#define COMMON_PLAN_EPOCH_ORDER_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"
#include "common/plan/keyed_permutation.h"
#include "common/plan/order_allocator.h"
#include "common/plan/torch_randperm.h"

namespace shard::plan {

class EpochOrder {
 public:
  // 0..n-1 in order. O(1) memory.
  static EpochOrder Identity(uint64_t n);
  // torch.randperm(n) with a generator seeded with `seed` (already seed +
  // epoch). Allocates 4 or 8 bytes per entry and takes O(n) time; an order
  // built while `cancelled` turned true is unfinished (see TorchRandperm).
  static EpochOrder TorchShuffled(uint64_t n, uint64_t seed,
                                  RandpermVariant variant,
                                  const std::atomic<bool>* cancelled = nullptr);

  uint64_t size() const { return size_; }
  // Keyed pseudo-random permutation, O(1) memory (not torch-compatible).
  static EpochOrder Feistel(uint64_t n, uint64_t key);
  // Block shuffle, O(1) memory (not torch-compatible).
  static EpochOrder Blocks(uint64_t n, uint64_t block_size,
                           uint64_t window_blocks, uint64_t key);

  // Entry i of the order; requires i < size().
  uint64_t At(uint64_t i) const {
    if (!narrow_.empty()) return narrow_[i];
    if (!wide_.empty()) return wide_[i];
    if (feistel_) return feistel_->At(i);
    if (blocks_) return blocks_->At(i);
    return i;
  }
  // Replaces each entry i of `positions` (each < size()) with At(i). The
  // block order reuses its per-window state across neighbouring positions
  // (a rank's consecutive entries share windows), which At cannot.
  void AtMany(absl::Span<uint64_t> positions) const {
    if (blocks_) {
      blocks_->AtMany(positions);
      return;
    }
    for (uint64_t& i : positions) i = At(i);
  }
  // Bytes held by the stored permutation (0 for the identity).
  uint64_t MemoryBytes() const {
    return narrow_.size() * sizeof(uint32_t) + wide_.size() * sizeof(uint64_t);
  }

 private:
  explicit EpochOrder(uint64_t n) : size_(n) {}

  uint64_t size_;
  // Used when shuffled and n <= 2^32, respectively above.
  std::vector<uint32_t, OrderAllocator<uint32_t>> narrow_;
  std::vector<uint64_t, OrderAllocator<uint64_t>> wide_;
  std::optional<FeistelPermutation> feistel_;
  std::optional<BlockShuffle> blocks_;
};

}  // namespace shard::plan

#endif  // COMMON_PLAN_EPOCH_ORDER_H_
