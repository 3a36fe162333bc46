// The global order of one epoch: a permutation of 0..N-1 (for a mixture,
// the epoch's chosen samples in shuffled order; see mixture.h).
//
// Built once per (job, epoch) and shared read-only by every rank's stream.
// The identity order (shuffle off) stores nothing; a torch-shuffled order is
// kept with 32-bit entries when N <= 2^32 and 64-bit entries otherwise, each
// stored XOR its position (so fresh zeroed memory is the identity); the
// keyed (Feistel) and block shuffles compute each entry on demand and store
// nothing.
//
// A torch-shuffled order may be read while it is being shuffled: made by
// PendingTorchShuffle(), it is shuffled (ShuffleFront(), then Shuffle())
// while others read the entries below FinalPrefix() and wait for the rest
// through progress(). Every other order is final when made.
// Thread-safety: ShuffleFront() and Shuffle() on one thread at a time;
// concurrent reads of final entries are safe.
#ifndef COMMON_PLAN_ORDERS_EPOCH_ORDER_H_
#define COMMON_PLAN_ORDERS_EPOCH_ORDER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "common/plan/mixtures/mixture.h"
#include "common/plan/shuffles/keyed_permutation.h"
#include "common/plan/shuffles/order_allocator.h"
#include "common/plan/shuffles/order_progress.h"
#include "common/plan/shuffles/torch_randperm.h"

namespace shard::plan {

class EpochOrder {
 public:
  // 0..n-1 in order. O(1) memory.
  static EpochOrder Identity(uint64_t n);
  // torch.randperm(n) with a generator seeded with `seed` (already seed +
  // epoch): PendingTorchShuffle + Shuffle. An order built while `cancelled`
  // turned true is unfinished.
  static EpochOrder TorchShuffled(uint64_t n, uint64_t seed,
                                  RandpermVariant variant,
                                  const std::atomic<bool>* cancelled = nullptr);
  // The same order, allocated (4 or 8 bytes per entry; throws
  // std::bad_alloc) but not shuffled yet: no entry is final until Shuffle()
  // runs.
  static EpochOrder PendingTorchShuffle(uint64_t n, uint64_t seed,
                                        RandpermVariant variant);
  // Makes the first entries of a pending order final in about a
  // millisecond (see PendingTorchRandperm::Front), so that every reader
  // can start before the bulk of the work; does nothing for other orders.
  void ShuffleFront();
  // Finishes shuffling a pending order in O(n), making entries final from
  // the front as it goes (see OrderProgress). Returns false, leaving the
  // order unfinished, if `cancelled` turned true; the caller then abandons
  // progress() with its error. Does nothing for any other order.
  bool Shuffle(const std::atomic<bool>* cancelled = nullptr);

  // Entries [0, FinalPrefix()) are final (all but a pending shuffle's).
  uint64_t FinalPrefix() const {
    return progress_ == nullptr ? size_ : progress_->Final();
  }
  // The progress of a pending shuffle (wait for entries with it); null for
  // orders that are final when made.
  OrderProgress* progress() const { return progress_.get(); }

  uint64_t size() const { return size_; }
  // One past the largest index At() may return: size() but for a mixture,
  // whose indices range over all its sources' samples. Sizes the wire's
  // index width.
  uint64_t IndexBound() const {
    return mixture_ ? mixture_->IndexBound() : size_;
  }
  // Keyed pseudo-random permutation, O(1) memory (not torch-compatible).
  static EpochOrder Feistel(uint64_t n, uint64_t key);
  // Block shuffle, O(1) memory (not torch-compatible).
  static EpochOrder Blocks(uint64_t n, uint64_t block_size,
                           uint64_t window_blocks, uint64_t key);

  // A mixture's order: each entry e of this order (a position in the
  // epoch's list of chosen samples) reads as mixture.Chosen(e). Requires
  // mixture.size() == size().
  void SelectFrom(MixtureEpoch mixture) {
    mixture_.emplace(std::move(mixture));
  }

  // Entry i of the order; requires i < FinalPrefix().
  uint64_t At(uint64_t i) const {
    const uint64_t entry = Shuffled(i);
    return mixture_ ? mixture_->Chosen(entry) : entry;
  }
  // Replaces each entry i of `positions` (each < FinalPrefix()) with At(i). The
  // block order reuses its per-window state across neighbouring positions
  // (a rank's consecutive entries share windows), which At cannot.
  void AtMany(absl::Span<uint64_t> positions) const {
    if (blocks_) {
      blocks_->AtMany(positions);
    } else {
      for (uint64_t& i : positions) i = Shuffled(i);
    }
    if (mixture_) {
      for (uint64_t& entry : positions) entry = mixture_->Chosen(entry);
    }
  }
  // Bytes held by the stored permutation (0 for the identity).
  uint64_t MemoryBytes() const {
    return narrow_.size() * sizeof(uint32_t) + wide_.size() * sizeof(uint64_t);
  }

 private:
  explicit EpochOrder(uint64_t n) : size_(n) {}

  // Entry i of the shuffle, before a mixture's selection.
  uint64_t Shuffled(uint64_t i) const {
    if (!narrow_.empty()) return narrow_[i] ^ static_cast<uint32_t>(i);
    if (!wide_.empty()) return wide_[i] ^ i;
    if (feistel_) return feistel_->At(i);
    if (blocks_) return blocks_->At(i);
    return i;
  }

  uint64_t size_;
  // A torch shuffle's progress, and its state until it is done.
  std::unique_ptr<OrderProgress> progress_;
  std::unique_ptr<PendingTorchRandperm> pending_;
  // Used when shuffled and n <= 2^32, respectively above (entry ^ position).
  std::vector<uint32_t, OrderAllocator<uint32_t>> narrow_;
  std::vector<uint64_t, OrderAllocator<uint64_t>> wide_;
  std::optional<FeistelPermutation> feistel_;
  std::optional<BlockShuffle> blocks_;
  std::optional<MixtureEpoch> mixture_;
};

}  // namespace shard::plan

#endif  // COMMON_PLAN_ORDERS_EPOCH_ORDER_H_
