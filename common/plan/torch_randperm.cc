#include "common/plan/torch_randperm.h"

#include <random>
#include <utility>

namespace shard::plan {
namespace {

// torch <= 2.5 (and every version for small n): r = 0..n-1, then for each i a
// single 32-bit draw modulo (n - i) picks the element swapped into place i.
template <typename Index>
void FisherYates32(std::mt19937& mt, absl::Span<Index> r) {
  const uint64_t n = r.size();
  for (uint64_t i = 0; i < n; ++i) r[i] = static_cast<Index>(i);
  if (n < 2) return;
  for (uint64_t i = 0; i < n - 1; ++i) {
    const uint64_t z = static_cast<uint32_t>(mt()) % (n - i);
    std::swap(r[i], r[i + z]);
  }
}

// torch >= 2.6 for n >= kRandpermLargeThreshold: an inside-out shuffle where
// each step draws 64 bits (first draw is the high word).
template <typename Index>
void InsideOut64(std::mt19937& mt, absl::Span<Index> r) {
  const uint64_t n = r.size();
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t hi = static_cast<uint32_t>(mt());
    const uint64_t lo = static_cast<uint32_t>(mt());
    const uint64_t z = ((hi << 32) | lo) % (i + 1);
    r[i] = r[z];
    r[z] = static_cast<Index>(i);
  }
}

template <typename Index>
void Randperm(uint64_t seed, RandpermVariant variant, uint64_t large_threshold,
              absl::Span<Index> out) {
  std::mt19937 mt(static_cast<uint32_t>(seed));
  if (variant == RandpermVariant::kTorch26 && out.size() >= large_threshold) {
    InsideOut64(mt, out);
  } else {
    FisherYates32(mt, out);
  }
}

}  // namespace

template <typename Index>
void TorchRandperm(uint64_t seed, RandpermVariant variant,
                   absl::Span<Index> out) {
  Randperm(seed, variant, kRandpermLargeThreshold, out);
}

namespace internal {
void TorchRandpermWithThreshold(uint64_t seed, RandpermVariant variant,
                                uint64_t large_threshold,
                                absl::Span<uint64_t> out) {
  Randperm(seed, variant, large_threshold, out);
}
}  // namespace internal

template void TorchRandperm<uint32_t>(uint64_t, RandpermVariant,
                                      absl::Span<uint32_t>);
template void TorchRandperm<uint64_t>(uint64_t, RandpermVariant,
                                      absl::Span<uint64_t>);

}  // namespace shard::plan
