#include "common/plan/shuffles/torch_randperm.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "common/plan/shuffles/mt19937_batch.h"

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
// Steps between two reports of the final prefix (a power of two, at most
// kCancelCheckSteps): about 0.1-0.2 ms of shuffling on 10^8 entries.
constexpr uint64_t kProgressSteps = uint64_t{1} << 14;
static_assert(kCancelCheckSteps % kProgressSteps == 0);
// Steps done sparsely at the start of a shuffle over zeroed entries (see
// SparseSteps): one default chunk (16384 indices) for each of 8 ranks. Only
// orders of at least kSparseMinSteps are started so.
constexpr uint64_t kSparseSteps = uint64_t{1} << 17;
constexpr uint64_t kSparseMinSteps = 4 * kSparseSteps;

// Whether step i is one that looks, and the flag says stop.
inline bool Cancelled(uint64_t i, const std::atomic<bool>* cancelled) {
  return (i & (kCancelCheckSteps - 1)) == 0 && cancelled != nullptr &&
         cancelled->load(std::memory_order_relaxed);
}

template <typename T>
inline void PrefetchForWrite(const T* address) {
  __builtin_prefetch(address, /*rw=*/1, /*locality=*/3);
}

// How a shuffle stores entries. Plain: entry i holds its value (the legacy
// shuffle writes the identity first). XorPosition: entry i holds its value
// XOR i, so memory that reads as zero already holds the identity and an
// entry no step touched yet needs no write at all.
template <typename Index>
struct PlainEntries {
  Index* r;
  uint64_t Get(uint64_t i) const { return r[i]; }
  void Set(uint64_t i, uint64_t value) { r[i] = static_cast<Index>(value); }
};
template <typename Index>
struct XorPositionEntries {
  Index* r;
  uint64_t Get(uint64_t i) const { return r[i] ^ static_cast<Index>(i); }
  void Set(uint64_t i, uint64_t value) { r[i] = static_cast<Index>(value ^ i); }
};

// Tells `progress` (if any) that entries [0, final) are final.
inline void Report(OrderProgress* progress, uint64_t final) {
  if (progress != nullptr) progress->Advance(final);
}

// Step i's offset from i in torch's Fisher-Yates over n entries, drawn in
// step order. A 32-bit draw modulo a range above 2^32 is the draw itself;
// below it, the cheaper 32-bit division gives the same.
struct Draw32 {
  Mt19937Batch& mt;
  uint64_t n;
  uint64_t operator()(uint64_t i) {
    const uint32_t x = static_cast<uint32_t>(mt());
    const uint64_t range = n - i;
    return range > UINT32_MAX ? x : x % static_cast<uint32_t>(range);
  }
};

// The first steps of a Fisher-Yates over entries that need no identity
// written (XorPositionEntries), while they are few: the entries they
// displace are kept in `displaced`, and only each step's final entry is
// written (at the front). So the first entries are final in about a
// millisecond, before the kernel has faulted in the order's memory (each
// fresh huge page is zeroed on first touch, and may wait for compaction:
// 30-800 ms for 381 MiB on the same VM). WriteDisplaced() later writes the
// rest. Returns the steps done.
template <typename Entries>
uint64_t SparseSteps(Draw32& draw, Entries r, uint64_t steps,
                     absl::flat_hash_map<uint64_t, uint64_t>& displaced,
                     OrderProgress* progress) {
  const uint64_t sparse = std::min(steps, kSparseSteps);
  displaced.reserve(sparse);
  auto value_at = [&displaced](uint64_t entry) {
    auto found = displaced.find(entry);
    return found == displaced.end() ? entry : found->second;
  };
  for (uint64_t i = 0; i < sparse; ++i) {
    if (i > 0 && (i & (kProgressSteps / 16 - 1)) == 0) Report(progress, i);
    const uint64_t j = i + draw(i);
    const uint64_t at_i = value_at(i);
    r.Set(i, value_at(j));
    displaced[j] = at_i;
  }
  Report(progress, sparse);
  return sparse;
}

// Writes what SparseSteps kept of the entries from `from` on (those below
// are final already) and empties `displaced`.
template <typename Entries>
void WriteDisplaced(Entries r, uint64_t from,
                    absl::flat_hash_map<uint64_t, uint64_t>& displaced) {
  for (const auto& [entry, value] : displaced) {
    if (entry >= from) r.Set(entry, value);
  }
  absl::flat_hash_map<uint64_t, uint64_t>().swap(displaced);
}

// torch <= 2.5 (and every version for small n): r = 0..n-1, then for each i a
// single 32-bit draw modulo (n - i) picks the element swapped into place i.
// Steps `first` .. steps - 1 of it (the earlier ones done), each entry final
// after its step: reported every kProgressSteps steps. Returns false if
// `cancelled` stopped it.
template <typename Entries>
bool DenseSteps(Draw32& draw, Entries r, uint64_t first, uint64_t steps,
                const std::atomic<bool>* cancelled, OrderProgress* progress) {
  uint64_t offsets[kRing];
  const uint64_t primed = std::min(first + kAhead, steps);
  for (uint64_t i = first; i < primed; ++i) {
    offsets[i % kRing] = draw(i);
    PrefetchForWrite(&r.r[i + offsets[i % kRing]]);
  }
  for (uint64_t i = first; i < steps; ++i) {
    if ((i & (kProgressSteps - 1)) == 0) {
      if (Cancelled(i, cancelled)) return false;
      if (i > 0) Report(progress, i);
    }
    const uint64_t ahead = i + kAhead;
    if (ahead < steps) {
      const uint64_t z = draw(ahead);
      offsets[ahead % kRing] = z;
      PrefetchForWrite(&r.r[ahead + z]);
    }
    const uint64_t j = i + offsets[i % kRing];
    const uint64_t at_i = r.Get(i);
    r.Set(i, r.Get(j));
    r.Set(j, at_i);
  }
  Report(progress, draw.n);
  return true;
}

// The whole legacy shuffle over plain entries: the identity, then every
// step.
template <typename Index>
bool FisherYates32(Mt19937Batch& mt, PlainEntries<Index> r, uint64_t n,
                   const std::atomic<bool>* cancelled) {
  // In chunks: a look at the flag between them, a plain (vectorised) loop
  // within.
  for (uint64_t start = 0; start < n; start += kCancelCheckSteps) {
    if (Cancelled(start, cancelled)) return false;
    const uint64_t end = std::min(n, start + kCancelCheckSteps);
    for (uint64_t i = start; i < end; ++i) r.Set(i, i);
  }
  Draw32 draw{mt, n};
  return DenseSteps(draw, r, 0, n < 2 ? 0 : n - 1, cancelled, nullptr);
}

// torch >= 2.6 for n >= kRandpermLargeThreshold: an inside-out shuffle where
// each step draws 64 bits (first draw is the high word) and moves r[z] to the
// end before writing i at z. Any step may change any earlier entry, so
// nothing is final before the last step.
template <typename Entries>
bool InsideOut64(Mt19937Batch& mt, Entries r, uint64_t n,
                 const std::atomic<bool>* cancelled, OrderProgress* progress) {
  auto draw = [&](uint64_t i) -> uint64_t {
    const uint64_t hi = static_cast<uint32_t>(mt());
    const uint64_t lo = static_cast<uint32_t>(mt());
    return ((hi << 32) | lo) % (i + 1);
  };
  uint64_t targets[kRing];
  const uint64_t primed = std::min(kAhead, n);
  for (uint64_t i = 0; i < primed; ++i) {
    targets[i] = draw(i);
    PrefetchForWrite(&r.r[targets[i]]);
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (Cancelled(i, cancelled)) return false;
    const uint64_t ahead = i + kAhead;
    if (ahead < n) {
      const uint64_t z = draw(ahead);
      targets[ahead % kRing] = z;
      PrefetchForWrite(&r.r[z]);
    }
    const uint64_t z = targets[i % kRing];
    r.Set(i, r.Get(z));
    r.Set(z, i);
  }
  Report(progress, n);
  return true;
}

// Whether torch's randperm of n entries is the inside-out shuffle.
bool InsideOut(RandpermVariant variant, uint64_t n, uint64_t large_threshold) {
  return variant == RandpermVariant::kTorch26 && n >= large_threshold;
}

template <typename Index>
void Randperm(uint64_t seed, RandpermVariant variant, uint64_t large_threshold,
              absl::Span<Index> out, const std::atomic<bool>* cancelled) {
  Mt19937Batch mt(static_cast<uint32_t>(seed));
  const PlainEntries<Index> entries{out.data()};
  if (InsideOut(variant, out.size(), large_threshold)) {
    InsideOut64(mt, entries, out.size(), cancelled, nullptr);
  } else {
    FisherYates32(mt, entries, out.size(), cancelled);
  }
}

// The two-part shuffle over XorPositionEntries.
template <typename Index>
class PendingShuffle final : public PendingTorchRandperm {
 public:
  PendingShuffle(uint64_t seed, RandpermVariant variant,
                 uint64_t large_threshold, absl::Span<Index> zeroed,
                 OrderProgress* progress)
      : mt_(static_cast<uint32_t>(seed)),
        n_(zeroed.size()),
        inside_out_(InsideOut(variant, n_, large_threshold)),
        entries_{zeroed.data()},
        progress_(progress) {}

  void Front() override {
    if (inside_out_ || next_step_ > 0 || Steps() < kSparseMinSteps) return;
    next_step_ = SparseSteps(draw_, entries_, Steps(), displaced_, progress_);
  }

  bool Rest(const std::atomic<bool>* cancelled) override {
    if (inside_out_) {
      return InsideOut64(mt_, entries_, n_, cancelled, progress_);
    }
    WriteDisplaced(entries_, next_step_, displaced_);
    return DenseSteps(draw_, entries_, next_step_, Steps(), cancelled,
                      progress_);
  }

 private:
  uint64_t Steps() const { return n_ < 2 ? 0 : n_ - 1; }

  Mt19937Batch mt_;
  const uint64_t n_;
  const bool inside_out_;
  Draw32 draw_{mt_, n_};
  const XorPositionEntries<Index> entries_;
  OrderProgress* const progress_;
  // The first step Front() left to Rest(), and the entries it displaced.
  uint64_t next_step_ = 0;
  absl::flat_hash_map<uint64_t, uint64_t> displaced_;
};

}  // namespace

template <typename Index>
void TorchRandperm(uint64_t seed, RandpermVariant variant,
                   absl::Span<Index> out, const std::atomic<bool>* cancelled) {
  Randperm(seed, variant, kRandpermLargeThreshold, out, cancelled);
}

template <typename Index>
std::unique_ptr<PendingTorchRandperm> StartTorchRandperm(
    uint64_t seed, RandpermVariant variant, absl::Span<Index> zeroed,
    OrderProgress* progress) {
  return std::make_unique<PendingShuffle<Index>>(
      seed, variant, kRandpermLargeThreshold, zeroed, progress);
}

namespace internal {
void TorchRandpermWithThreshold(uint64_t seed, RandpermVariant variant,
                                uint64_t large_threshold,
                                absl::Span<uint64_t> out) {
  Randperm(seed, variant, large_threshold, out, nullptr);
}

std::unique_ptr<PendingTorchRandperm> StartTorchRandpermWithThreshold(
    uint64_t seed, RandpermVariant variant, uint64_t large_threshold,
    absl::Span<uint64_t> zeroed, OrderProgress* progress) {
  return std::make_unique<PendingShuffle<uint64_t>>(
      seed, variant, large_threshold, zeroed, progress);
}
}  // namespace internal

template void TorchRandperm<uint32_t>(uint64_t, RandpermVariant,
                                      absl::Span<uint32_t>,
                                      const std::atomic<bool>*);
template void TorchRandperm<uint64_t>(uint64_t, RandpermVariant,
                                      absl::Span<uint64_t>,
                                      const std::atomic<bool>*);
template std::unique_ptr<PendingTorchRandperm> StartTorchRandperm<uint32_t>(
    uint64_t, RandpermVariant, absl::Span<uint32_t>, OrderProgress*);
template std::unique_ptr<PendingTorchRandperm> StartTorchRandperm<uint64_t>(
    uint64_t, RandpermVariant, absl::Span<uint64_t>, OrderProgress*);

}  // namespace shard::plan
