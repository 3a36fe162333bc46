// A job's per-sample costs (balanced batches), resident in memory: 2 bytes
// a sample when every cost fits 16 bits, else 4. Immutable once made;
// shared read-only by every stream of the job (thread-safe).
#ifndef COMMON_PLAN_BATCHES_COST_TABLE_H_
#define COMMON_PLAN_BATCHES_COST_TABLE_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/plan/shuffles/order_allocator.h"

namespace shard::plan {

class CostTable {
 public:
  // The costs in `le32` (little-endian u32 values; size a multiple of 4).
  static CostTable FromLittleEndian32(absl::string_view le32);

  uint64_t size() const { return narrow_.size() + wide_.size(); }
  // The sum of the costs (below 2^64: at most 2^32 costs of u32).
  uint64_t total() const { return total_; }
  uint32_t At(uint64_t sample) const {
    return narrow_.empty() ? wide_[sample] : narrow_[sample];
  }
  // out[i] = At(samples[i]) for every i (out.size() == samples.size()),
  // prefetching ahead: a window's samples are scattered over the table.
  void Gather(absl::Span<const uint64_t> samples,
              absl::Span<uint32_t> out) const;
  // Reads one entry of every 4 KiB page, so that a gather soon after finds
  // the pages' address translations cached: the first gather over a table
  // that sat idle took 3.5-15 ms for 65,536 samples of 10^8 (cold page
  // walks), a later one about 1 ms, and 1 ms again after this (the VM of
  // docs/benchmarks.md).
  void TouchPages() const;
  uint64_t MemoryBytes() const {
    return narrow_.size() * sizeof(uint16_t) + wide_.size() * sizeof(uint32_t);
  }

 private:
  // On 2 MiB pages where the kernel allows (OrderAllocator): a gather reads
  // samples scattered over the whole table.
  std::vector<uint16_t, OrderAllocator<uint16_t>> narrow_;
  std::vector<uint32_t, OrderAllocator<uint32_t>> wide_;
  uint64_t total_ = 0;
};

// The sum of the little-endian u32 costs in `le32` (at most 2^32 of them),
// as JobSpec.batches.costs_total names it.
uint64_t CostsTotal(absl::string_view le32);

// Whether `text` is 64 lowercase hex digits.
bool IsSha256Hex(absl::string_view text);

}  // namespace shard::plan

#endif  // COMMON_PLAN_BATCHES_COST_TABLE_H_
