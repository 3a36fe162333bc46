#include "common/plan/batches/cost_table.h"

#include <algorithm>

#include "absl/strings/ascii.h"

namespace shard::plan {
namespace {

uint32_t ReadLe32(const char* at) {
  const auto* b = reinterpret_cast<const unsigned char*>(at);
  return uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 |
         uint32_t{b[3]} << 24;
}

}  // namespace

CostTable CostTable::FromLittleEndian32(absl::string_view le32) {
  const uint64_t count = le32.size() / 4;
  uint32_t largest = 0;
  uint64_t total = 0;  // CostsTotal, in the same pass
  for (uint64_t i = 0; i < count; ++i) {
    const uint32_t cost = ReadLe32(le32.data() + 4 * i);
    largest = std::max(largest, cost);
    total += cost;
  }
  CostTable table;
  table.total_ = total;
  if (largest <= UINT16_MAX) {
    table.narrow_.resize(count);
    for (uint64_t i = 0; i < count; ++i) {
      table.narrow_[i] = static_cast<uint16_t>(ReadLe32(le32.data() + 4 * i));
    }
  } else {
    table.wide_.resize(count);
    for (uint64_t i = 0; i < count; ++i) {
      table.wide_[i] = ReadLe32(le32.data() + 4 * i);
    }
  }
  return table;
}

uint64_t CostsTotal(absl::string_view le32) {
  uint64_t total = 0;
  for (uint64_t i = 0; i < le32.size() / 4; ++i) {
    total += ReadLe32(le32.data() + 4 * i);
  }
  return total;
}

void CostTable::Gather(absl::Span<const uint64_t> samples,
                       absl::Span<uint32_t> out) const {
  constexpr size_t kAhead = 16;  // cache misses in flight at once
  for (size_t i = 0; i < samples.size(); ++i) {
    if (i + kAhead < samples.size()) {
      const uint64_t next = samples[i + kAhead];
      if (narrow_.empty()) {
        __builtin_prefetch(&wide_[next]);
      } else {
        __builtin_prefetch(&narrow_[next]);
      }
    }
    out[i] = At(samples[i]);
  }
}

void CostTable::TouchPages() const {
  constexpr uint64_t kPage = 4096;
  const uint64_t step =
      kPage / (narrow_.empty() ? sizeof(uint32_t) : sizeof(uint16_t));
  volatile uint32_t read = 0;  // every read is made
  for (uint64_t i = 0; i < size(); i += step) read = At(i);
  (void)read;
}

bool IsSha256Hex(absl::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f');
         });
}

}  // namespace shard::plan
