// Opt-in scalable shuffles (not torch-compatible): a keyed pseudo-random
// permutation of 0..n-1 with O(1) memory and O(1) expected time per entry,
// and a block shuffle for datasets stored in contiguous shards.
//
// FeistelPermutation: a 6-round balanced Feistel network over the smallest
// even number of bits covering n, made a permutation of 0..n-1 by cycle
// walking (re-encrypt until the value falls below n; fewer than 4 steps on
// average because the domain is under 4n). Nothing is materialised.
//
// BlockShuffle: the dataset is cut into blocks of `block_size` contiguous
// indices; the order of the full blocks is a keyed permutation (a shorter
// last block stays last), and the indices inside each window of
// `window_blocks` consecutive (permuted) blocks are shuffled together. A rank
// streaming a window therefore touches at most window_blocks blocks (files).
// Both are immutable values; At() is thread-safe.
#ifndef COMMON_PLAN_SHUFFLES_KEYED_PERMUTATION_H_
#define COMMON_PLAN_SHUFFLES_KEYED_PERMUTATION_H_

#include <cstdint>

#include "absl/types/span.h"

namespace shard::plan {

class FeistelPermutation {
 public:
  // A permutation of 0..n-1 chosen by `key`. Requires n >= 1.
  FeistelPermutation(uint64_t n, uint64_t key);

  uint64_t size() const { return n_; }
  // Entry i; requires i < size().
  uint64_t At(uint64_t i) const;

 private:
  uint64_t Encrypt(uint64_t x) const;

  uint64_t n_;
  int half_bits_;
  uint64_t half_mask_;
  uint64_t round_keys_[6];
};

class BlockShuffle {
 public:
  // Requires n >= 1, block_size >= 1, window_blocks >= 1.
  BlockShuffle(uint64_t n, uint64_t block_size, uint64_t window_blocks,
               uint64_t key);

  uint64_t size() const { return n_; }
  // Entry i; requires i < size(). Derives the window's permutation keys
  // on every call.
  uint64_t At(uint64_t i) const;
  // Replaces each element i (< size()) with At(i), deriving a window's
  // permutation once per run of elements in the same window.
  void AtMany(absl::Span<uint64_t> entries) const;

 private:
  // The permutation inside `window` (its length is window_blocks_ blocks,
  // or what is left for the last window).
  FeistelPermutation WindowPermutation(uint64_t window) const;
  // Entry i, given the permutation of the window holding it.
  uint64_t AtInWindow(uint64_t i, uint64_t window,
                      const FeistelPermutation& in_window) const;
  // The block at position `slot` of the shuffled block order.
  uint64_t BlockAt(uint64_t slot) const;

  uint64_t n_;
  uint64_t block_size_;
  uint64_t window_blocks_;
  uint64_t full_blocks_;
  uint64_t key_;
  // Order of the full blocks (over max(full_blocks, 1) entries).
  FeistelPermutation block_order_;
};

// A well-mixed 64-bit key from a seed (splitmix64).
uint64_t MixKey(uint64_t seed);

}  // namespace shard::plan

#endif  // COMMON_PLAN_SHUFFLES_KEYED_PERMUTATION_H_
