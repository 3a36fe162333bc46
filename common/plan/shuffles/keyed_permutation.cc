#include "common/plan/shuffles/keyed_permutation.h"

#include <algorithm>
#include <vector>

namespace shard::plan {
namespace {

// Round function: a keyed 64-bit mix (murmur3 finaliser) of the half block.
uint64_t Round(uint64_t half, uint64_t key) {
  uint64_t x = half ^ key;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

}  // namespace

uint64_t MixKey(uint64_t seed) {
  uint64_t x = seed + 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

FeistelPermutation::FeistelPermutation(uint64_t n, uint64_t key) : n_(n) {
  int bits = 1;
  while (bits < 64 && (uint64_t{1} << bits) < n) ++bits;
  half_bits_ = (bits + 1) / 2;
  half_mask_ = (uint64_t{1} << half_bits_) - 1;
  uint64_t state = key;
  for (uint64_t& round_key : round_keys_) {
    state = MixKey(state);
    round_key = state;
  }
}

uint64_t FeistelPermutation::Encrypt(uint64_t x) const {
  uint64_t left = x >> half_bits_;
  uint64_t right = x & half_mask_;
  for (uint64_t round_key : round_keys_) {
    const uint64_t next = left ^ (Round(right, round_key) & half_mask_);
    left = right;
    right = next;
  }
  return (left << half_bits_) | right;
}

uint64_t FeistelPermutation::At(uint64_t i) const {
  uint64_t x = Encrypt(i);
  while (x >= n_) x = Encrypt(x);  // Cycle walking stays in the domain.
  return x;
}

BlockShuffle::BlockShuffle(uint64_t n, uint64_t block_size,
                           uint64_t window_blocks, uint64_t key)
    : n_(n),
      block_size_(block_size),
      window_blocks_(window_blocks),
      full_blocks_(n / block_size),
      key_(key),
      block_order_(std::max<uint64_t>(full_blocks_, 1),
                   MixKey(key ^ 0x626c6f636b73ull)) {}

uint64_t BlockShuffle::BlockAt(uint64_t slot) const {
  return slot < full_blocks_ ? block_order_.At(slot) : full_blocks_;
}

FeistelPermutation BlockShuffle::WindowPermutation(uint64_t window) const {
  // Every window but the last holds window_blocks full blocks.
  const uint64_t window_span = window_blocks_ * block_size_;
  const uint64_t window_start = window * window_span;
  return FeistelPermutation(std::min(window_span, n_ - window_start),
                            MixKey(key_ + window));
}

uint64_t BlockShuffle::AtInWindow(uint64_t i, uint64_t window,
                                  const FeistelPermutation& in_window) const {
  const uint64_t local =
      in_window.At(i - window * window_blocks_ * block_size_);
  const uint64_t block = BlockAt(window * window_blocks_ + local / block_size_);
  return block * block_size_ + local % block_size_;
}

uint64_t BlockShuffle::At(uint64_t i) const {
  const uint64_t window = i / (window_blocks_ * block_size_);
  return AtInWindow(i, window, WindowPermutation(window));
}

void BlockShuffle::AtMany(absl::Span<uint64_t> entries) const {
  // Per window: its permutation and (for windows of a modest number of
  // blocks) the blocks it maps to, derived once for all of its entries.
  constexpr uint64_t kMaxCachedBlocks = 4096;
  const uint64_t window_span = window_blocks_ * block_size_;
  const bool cache_blocks = window_blocks_ <= kMaxCachedBlocks;
  uint64_t window = UINT64_MAX;
  FeistelPermutation in_window(1, 0);
  std::vector<uint64_t> blocks;
  for (uint64_t& entry : entries) {
    const uint64_t entry_window = entry / window_span;
    if (entry_window != window) {
      window = entry_window;
      in_window = WindowPermutation(window);
      if (cache_blocks) {
        blocks.clear();
        const uint64_t window_length = in_window.size();
        for (uint64_t b = 0; b * block_size_ < window_length; ++b) {
          blocks.push_back(BlockAt(window * window_blocks_ + b));
        }
      }
    }
    if (!cache_blocks) {
      entry = AtInWindow(entry, window, in_window);
      continue;
    }
    const uint64_t local = in_window.At(entry - window * window_span);
    entry = blocks[local / block_size_] * block_size_ + local % block_size_;
  }
}

}  // namespace shard::plan
