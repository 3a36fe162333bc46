// The straightforward torch.randperm port (one swap at a time, no
// prefetching), kept as the oracle the optimised common/plan/torch_randperm
// must equal bit for bit, and as the baseline of shard-randperm-bench.
#ifndef TESTS_SUPPORT_REFERENCE_RANDPERM_H_
#define TESTS_SUPPORT_REFERENCE_RANDPERM_H_

#include <cstdint>
#include <random>
#include <utility>

#include "absl/types/span.h"

namespace shard::testing {

// torch.randperm(out.size(), generator=manual_seed(seed)): 32-bit
// Fisher-Yates below `large_threshold` (and always when !torch26), the
// torch >= 2.6 inside-out 64-bit shuffle from it on.
template <typename Index>
void ReferenceRandperm(uint64_t seed, bool torch26, uint64_t large_threshold,
                       absl::Span<Index> r) {
  std::mt19937 mt(static_cast<uint32_t>(seed));
  const uint64_t n = r.size();
  if (torch26 && n >= large_threshold) {
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t hi = static_cast<uint32_t>(mt());
      const uint64_t lo = static_cast<uint32_t>(mt());
      const uint64_t z = ((hi << 32) | lo) % (i + 1);
      r[i] = r[z];
      r[z] = static_cast<Index>(i);
    }
    return;
  }
  for (uint64_t i = 0; i < n; ++i) r[i] = static_cast<Index>(i);
  if (n < 2) return;
  for (uint64_t i = 0; i < n - 1; ++i) {
    const uint64_t z = static_cast<uint32_t>(mt()) % (n - i);
    std::swap(r[i], r[i + z]);
  }
}

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_REFERENCE_RANDPERM_H_
