#include "common/plan/torch_randperm.h"

#include <algorithm>
#include <utility>

#include "common/plan/mt19937_batch.h"

namespace shard::plan {
namespace {

// Both shuffles are bound by memory, not arithmetic: every step touches one
// random element of an array far larger than the caches. The element a step
// touches depends only on the random stream, never on the data, so the
// offsets are drawn kAhead steps early (in the same order, so the stream is
// torch's) and their cache lines prefetched; by the time a step runs, its
// line is (usually) there, and many misses are in flight at once.
constexpr uint64_t kAhead = 64;
constexpr uint64_t kRing = 128;  // power of two, > kAhead
static_assert((kRing & (kRing - 1)) == 0 && kRing > kAhead);

// Steps between two looks at the cancel flag (a power of two).
constexpr uint64_t kCancelCheckSteps = uint64_t{1} << 20;

// Whether step i is one that looks, and the flag says stop.
inline bool Cancelled(uint64_t i, const std::atomic<bool>* cancelled) {
  return (i & (kCancelCheckSteps - 1)) == 0 && cancelled != nullptr &&
         cancelled->load(std::memory_order_relaxed);
}

template <typename T>
inline void PrefetchForWrite(const T* address) {
  __builtin_prefetch(address, /*rw=*/1, /*locality=*/3);
}

// torch <= 2.5 (and every version for small n): r = 0..n-1, then for each i a
// single 32-bit draw modulo (n - i) picks the element swapped into place i.
template <typename Index>
void FisherYates32(Mt19937Batch& mt, absl::Span<Index> r,
                   const std::atomic<bool>* cancelled) {
  const uint64_t n = r.size();
  // In chunks: a look at the flag between them, a plain (vectorised) loop
  // within.
  for (uint64_t start = 0; start < n; start += kCancelCheckSteps) {
    if (Cancelled(start, cancelled)) return;
    const uint64_t end = std::min(n, start + kCancelCheckSteps);
    for (uint64_t i = start; i < end; ++i) r[i] = static_cast<Index>(i);
  }
  if (n < 2) return;
  const uint64_t steps = n - 1;
  // The offset of step i from i. A 32-bit draw modulo a range above 2^32 is
  // the draw itself; below it, the cheaper 32-bit division gives the same.
  auto draw = [&](uint64_t i) -> uint64_t {
    const uint32_t x = static_cast<uint32_t>(mt());
    const uint64_t range = n - i;
    return range > UINT32_MAX ? x : x % static_cast<uint32_t>(range);
  };
  uint64_t offsets[kRing];
  const uint64_t primed = std::min(kAhead, steps);
  for (uint64_t i = 0; i < primed; ++i) {
    offsets[i] = draw(i);
    PrefetchForWrite(&r[i + offsets[i]]);
  }
  for (uint64_t i = 0; i < steps; ++i) {
    if (Cancelled(i, cancelled)) return;
    const uint64_t ahead = i + kAhead;
    if (ahead < steps) {
      const uint64_t z = draw(ahead);
      offsets[ahead % kRing] = z;
      PrefetchForWrite(&r[ahead + z]);
    }
    std::swap(r[i], r[i + offsets[i % kRing]]);
  }
}

// torch >= 2.6 for n >= kRandpermLargeThreshold: an inside-out shuffle where
// each step draws 64 bits (first draw is the high word) and moves r[z] to the
// end before writing i at z.
template <typename Index>
void InsideOut64(Mt19937Batch& mt, absl::Span<Index> r,
                 const std::atomic<bool>* cancelled) {
  const uint64_t n = r.size();
  auto draw = [&](uint64_t i) -> uint64_t {
    const uint64_t hi = static_cast<uint32_t>(mt());
    const uint64_t lo = static_cast<uint32_t>(mt());
    return ((hi << 32) | lo) % (i + 1);
  };
  uint64_t targets[kRing];
  const uint64_t primed = std::min(kAhead, n);
  for (uint64_t i = 0; i < primed; ++i) {
    targets[i] = draw(i);
    PrefetchForWrite(&r[targets[i]]);
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (Cancelled(i, cancelled)) return;
    const uint64_t ahead = i + kAhead;
    if (ahead < n) {
      const uint64_t z = draw(ahead);
      targets[ahead % kRing] = z;
      PrefetchForWrite(&r[z]);
    }
    const uint64_t z = targets[i % kRing];
    r[i] = r[z];
    r[z] = static_cast<Index>(i);
  }
}

template <typename Index>
void Randperm(uint64_t seed, RandpermVariant variant, uint64_t large_threshold,
              absl::Span<Index> out, const std::atomic<bool>* cancelled) {
  Mt19937Batch mt(static_cast<uint32_t>(seed));
  if (variant == RandpermVariant::kTorch26 && out.size() >= large_threshold) {
    InsideOut64(mt, out, cancelled);
  } else {
    FisherYates32(mt, out, cancelled);
  }
}

}  // namespace

template <typename Index>
void TorchRandperm(uint64_t seed, RandpermVariant variant,
                   absl::Span<Index> out, const std::atomic<bool>* cancelled) {
  Randperm(seed, variant, kRandpermLargeThreshold, out, cancelled);
}

namespace internal {
void TorchRandpermWithThreshold(uint64_t seed, RandpermVariant variant,
                                uint64_t large_threshold,
                                absl::Span<uint64_t> out) {
  Randperm(seed, variant, large_threshold, out, nullptr);
}
}  // namespace internal

template void TorchRandperm<uint32_t>(uint64_t, RandpermVariant,
                                      absl::Span<uint32_t>,
                                      const std::atomic<bool>*);
template void TorchRandperm<uint64_t>(uint64_t, RandpermVariant,
                                      absl::Span<uint64_t>,
                                      const std::atomic<bool>*);

}  // namespace shard::plan
