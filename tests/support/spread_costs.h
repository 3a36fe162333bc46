// Per-sample costs for balanced-batch tests: a fixed spread between 16 and
// 1024, as PutCosts takes them (little-endian u32 values).
#ifndef TESTS_SUPPORT_SPREAD_COSTS_H_
#define TESTS_SUPPORT_SPREAD_COSTS_H_

#include <cstdint>
#include <string>

namespace shard::testing {

inline std::string SpreadCosts(uint64_t samples) {
  std::string le32;
  le32.reserve(4 * samples);
  for (uint64_t i = 0; i < samples; ++i) {
    const uint32_t cost = 16 + (i * 7919) % 1009;
    for (int b = 0; b < 4; ++b) le32 += static_cast<char>(cost >> (8 * b));
  }
  return le32;
}

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_SPREAD_COSTS_H_
