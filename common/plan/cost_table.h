// A job's per-sample costs (balanced batches), resident in memory: 2 bytes
// a sample when every cost fits 16 bits, else 4. Immutable once made;
// shared read-only by every stream of the job (thread-safe).
#ifndef COMMON_PLAN_COST_TABLE_H_
#define COMMON_PLAN_COST_TABLE_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace shard::plan {

class CostTable {
 public:
  // The costs in `le32` (little-endian u32 values; size a multiple of 4).
  static CostTable FromLittleEndian32(absl::string_view le32);

  uint64_t size() const { return narrow_.size() + wide_.size(); }
  uint32_t At(uint64_t sample) const {
    return narrow_.empty() ? wide_[sample] : narrow_[sample];
  }
  // out[i] = At(samples[i]) for every i (out.size() == samples.size()),
  // prefetching ahead: a window's samples are scattered over the table.
  void Gather(absl::Span<const uint64_t> samples,
              absl::Span<uint32_t> out) const;
  uint64_t MemoryBytes() const {
    return narrow_.size() * sizeof(uint16_t) + wide_.size() * sizeof(uint32_t);
  }

 private:
  std::vector<uint16_t> narrow_;
  std::vector<uint32_t> wide_;
};

// Whether `text` is 64 lowercase hex digits.
bool IsSha256Hex(absl::string_view text);

}  // namespace shard::plan

#endif  // COMMON_PLAN_COST_TABLE_H_
