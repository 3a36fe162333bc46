// CostTable: 2 bytes a sample when every cost fits 16 bits, else 4;
// Gather reads what At reads, for tables below and above the size that
// goes on huge pages; TouchPages reads within the table whatever its size.
#include "common/plan/batches/cost_table.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace shard::plan {
namespace {

std::string LittleEndian32(const std::vector<uint32_t>& costs) {
  std::string le32;
  for (uint32_t cost : costs) {
    for (int shift = 0; shift < 32; shift += 8) {
      le32.push_back(static_cast<char>((cost >> shift) & 0xff));
    }
  }
  return le32;
}

// `count` costs in 1..largest, the first of them `largest`.
std::vector<uint32_t> Costs(uint64_t count, uint32_t largest) {
  std::vector<uint32_t> costs(count);
  for (uint64_t i = 0; i < count; ++i) {
    costs[i] = static_cast<uint32_t>((i * 2654435761u) % largest) + 1;
  }
  if (count > 0) costs[0] = largest;
  return costs;
}

TEST(CostTableTest, HoldsTwoBytesASampleWhenCostsFit16Bits) {
  const CostTable narrow =
      CostTable::FromLittleEndian32(LittleEndian32(Costs(1000, 65535)));
  EXPECT_EQ(narrow.MemoryBytes(), 2000u);
  const CostTable wide =
      CostTable::FromLittleEndian32(LittleEndian32(Costs(1000, 65536)));
  EXPECT_EQ(wide.MemoryBytes(), 4000u);
}

TEST(CostTableTest, GatherReadsWhatAtReads) {
  // 3 * 2^20 samples: on 2 MiB pages (6 MiB narrow, 12 MiB wide).
  for (uint64_t count : {uint64_t{5000}, uint64_t{3} << 20}) {
    for (uint32_t largest : {1024u, 1u << 20}) {
      const std::vector<uint32_t> costs = Costs(count, largest);
      const CostTable table =
          CostTable::FromLittleEndian32(LittleEndian32(costs));
      ASSERT_EQ(table.size(), count);
      std::vector<uint64_t> samples;
      for (uint64_t i = 0; i < 4096; ++i) {
        samples.push_back((i * 40503) % count);
      }
      std::vector<uint32_t> out(samples.size());
      table.Gather(samples, absl::MakeSpan(out));
      for (size_t i = 0; i < samples.size(); ++i) {
        ASSERT_EQ(out[i], costs[samples[i]]) << count << " " << largest;
        ASSERT_EQ(table.At(samples[i]), costs[samples[i]]);
      }
    }
  }
}

TEST(CostTableTest, TouchPagesStaysWithinTheTable) {
  // Under AddressSanitizer a read past the end fails this test.
  for (uint64_t count : {0, 1, 2047, 2048, 2049, 1 << 20}) {
    CostTable::FromLittleEndian32(LittleEndian32(Costs(count, 100)))
        .TouchPages();
    CostTable::FromLittleEndian32(LittleEndian32(Costs(count, 1 << 20)))
        .TouchPages();
  }
}

}  // namespace
}  // namespace shard::plan
