// OrderAllocator: large orders are mapped on their own at a 2 MiB boundary
// (so transparent huge pages can back them) and are fully usable; small
// ones come from operator new; resize() leaves entries for the shuffle.
#include "common/plan/shuffles/order_allocator.h"

#include <cstdint>
#include <vector>

#include "common/plan/orders/epoch_order.h"
#include "gtest/gtest.h"

namespace shard::plan {
namespace {

TEST(OrderAllocatorTest, ALargeBlockStartsOnAHugePageBoundary) {
  // 3 MiB + 4 bytes: not a multiple of the huge page.
  const size_t n = (size_t{3} << 20) / sizeof(uint32_t) + 1;
  std::vector<uint32_t, OrderAllocator<uint32_t>> order;
  order.resize(n);
  EXPECT_EQ(
      reinterpret_cast<uintptr_t>(order.data()) % internal::kHugePageBytes, 0u);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint32_t>(i * 7);
  uint64_t sum = 0;
  for (uint32_t v : order) sum += v;
  EXPECT_EQ(sum, 7ull * (n - 1) * n / 2);
}

TEST(OrderAllocatorTest, ManyLargeBlocksAreReturned) {
  // 64 rounds of 64 MiB: 4 GiB in total, far above what a test machine
  // could hold if blocks were not unmapped.
  for (int round = 0; round < 64; ++round) {
    std::vector<uint64_t, OrderAllocator<uint64_t>> order;
    order.resize((size_t{64} << 20) / sizeof(uint64_t));
    order.front() = 1;
    order.back() = 2;
    EXPECT_EQ(order.front() + order.back(), 3u);
  }
}

TEST(OrderAllocatorTest, SmallBlocksWork) {
  std::vector<uint32_t, OrderAllocator<uint32_t>> order(5, 9u);
  EXPECT_EQ(order, (std::vector<uint32_t, OrderAllocator<uint32_t>>(5, 9u)));
  order.push_back(1);
  EXPECT_EQ(order.size(), 6u);
}

TEST(OrderAllocatorTest, AShuffledOrderOnHugePagesIsStillAPermutation) {
  const uint64_t n = 3'000'000;  // 11.4 MiB of 32-bit entries.
  EpochOrder order = EpochOrder::TorchShuffled(n, 7, RandpermVariant::kLegacy);
  std::vector<bool> seen(n);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t v = order.At(i);
    ASSERT_LT(v, n);
    ASSERT_FALSE(seen[v]) << v;
    seen[v] = true;
  }
}

}  // namespace
}  // namespace shard::plan
