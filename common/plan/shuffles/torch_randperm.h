// Bit-exact port of CPU torch.randperm with a seeded generator.
//
// torch's CPU generator is mt19937 seeded with the low 32 bits of the seed, so
// the MT19937 stream (Mt19937Batch, equal to std::mt19937) reproduces it
// without libtorch. The shuffles draw their random offsets a few dozen steps
// ahead and prefetch the elements those steps will swap, so that many cache
// misses are in flight at once (the data never decides which element a step
// touches, only the random stream does). TorchRandperm is a pure function
// (no state, no I/O, safe to call from any thread); a PendingTorchRandperm
// holds one shuffle's state between its two parts.
#ifndef COMMON_PLAN_SHUFFLES_TORCH_RANDPERM_H_
#define COMMON_PLAN_SHUFFLES_TORCH_RANDPERM_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/types/span.h"
#include "common/plan/shuffles/order_progress.h"

namespace shard::plan {

// Which torch release's algorithm to reproduce (see shard.v1.TorchRandperm).
enum class RandpermVariant {
  kLegacy,   // torch <= 2.5: 32-bit Fisher-Yates for every n.
  kTorch26,  // torch >= 2.6: inside-out shuffle with 64-bit draws for large n.
};

// Smallest n for which the torch >= 2.6 algorithm differs from the legacy one
// (torch switches when n >= UINT32_MAX / 20).
inline constexpr uint64_t kRandpermLargeThreshold = 4294967295ull / 20;

// Writes torch.randperm(out.size(), generator=manual_seed(seed)) into `out`.
// Index must be wide enough to hold out.size() - 1. When `cancelled` is
// given and turns true, returns early (within about a million steps),
// leaving `out` unfinished: the caller discards it.
template <typename Index>
void TorchRandperm(uint64_t seed, RandpermVariant variant,
                   absl::Span<Index> out,
                   const std::atomic<bool>* cancelled = nullptr);

// The same permutation, stored as entry XOR position (entry i of the
// permutation is zeroed[i] ^ i) in `zeroed`, which must read as all zeros
// (so the identity is never written), and shuffled in two parts so that
// orders can be read while they are built. Front() makes the first entries
// final in about a millisecond without touching the rest of the memory;
// Rest() does everything else. Both report the final prefix to `progress`
// (may be null; see OrderProgress). torch's forward Fisher-Yates (both
// variants below kRandpermLargeThreshold) finalises entries from the front
// as it goes; the torch >= 2.6 inside-out shuffle for larger n finalises
// nothing before its last step (any step may move any earlier entry), so
// its Front() does nothing. Call Front() then Rest(), or Rest() alone, on
// one thread at a time; `zeroed` and `progress` must outlive this object.
class PendingTorchRandperm {
 public:
  virtual ~PendingTorchRandperm() = default;
  // The cheap first part (about 10^5 steps through a hash map; nothing for
  // small orders and the inside-out shuffle).
  virtual void Front() = 0;
  // Everything Front() did not do. Returns false, leaving the entries
  // unfinished, if `cancelled` (may be null) turned true.
  virtual bool Rest(const std::atomic<bool>* cancelled) = 0;
};

template <typename Index>
std::unique_ptr<PendingTorchRandperm> StartTorchRandperm(
    uint64_t seed, RandpermVariant variant, absl::Span<Index> zeroed,
    OrderProgress* progress);

extern template void TorchRandperm<uint32_t>(uint64_t, RandpermVariant,
                                             absl::Span<uint32_t>,
                                             const std::atomic<bool>*);
extern template void TorchRandperm<uint64_t>(uint64_t, RandpermVariant,
                                             absl::Span<uint64_t>,
                                             const std::atomic<bool>*);

extern template std::unique_ptr<PendingTorchRandperm>
StartTorchRandperm<uint32_t>(uint64_t, RandpermVariant, absl::Span<uint32_t>,
                             OrderProgress*);
extern template std::unique_ptr<PendingTorchRandperm>
StartTorchRandperm<uint64_t>(uint64_t, RandpermVariant, absl::Span<uint64_t>,
                             OrderProgress*);

namespace internal {
// TorchRandperm with the large-n switch point as a parameter, so tests can
// exercise the torch >= 2.6 branch on small n.
void TorchRandpermWithThreshold(uint64_t seed, RandpermVariant variant,
                                uint64_t large_threshold,
                                absl::Span<uint64_t> out);
// StartTorchRandperm likewise.
std::unique_ptr<PendingTorchRandperm> StartTorchRandpermWithThreshold(
    uint64_t seed, RandpermVariant variant, uint64_t large_threshold,
    absl::Span<uint64_t> zeroed, OrderProgress* progress);
}  // namespace internal

}  // namespace shard::plan

#endif  // COMMON_PLAN_SHUFFLES_TORCH_RANDPERM_H_
