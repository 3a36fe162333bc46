#include "common/plan/shuffles/keyed_permutation.h"

#include <algorithm>
#include <set>
#include <vector>

#include "common/plan/layouts/rank_indices.h"
#include "common/plan/layouts/shard_layout.h"
#include "common/plan/orders/epoch_order.h"
#include "common/plan/spec/job_spec.h"
#include "gtest/gtest.h"

namespace shard::plan {
namespace {

template <typename Permutation>
void ExpectPermutation(const Permutation& p, uint64_t n) {
  std::vector<bool> seen(n, false);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t v = p.At(i);
    ASSERT_LT(v, n) << "i=" << i;
    ASSERT_FALSE(seen[v]) << "duplicate " << v << " n=" << n;
    seen[v] = true;
  }
}

TEST(FeistelPermutationTest, IsAPermutationForManySizes) {
  for (uint64_t n : {1, 2, 3, 5, 64, 1000, 4097, 65537, 1048579}) {
    ExpectPermutation(FeistelPermutation(n, MixKey(n)), n);
  }
}

TEST(FeistelPermutationTest, KeyedAndDeterministic) {
  const FeistelPermutation a(100000, 1), b(100000, 1), c(100000, 2);
  int same_as_other_key = 0, fixed_points = 0;
  for (uint64_t i = 0; i < 100000; ++i) {
    EXPECT_EQ(a.At(i), b.At(i));
    same_as_other_key += a.At(i) == c.At(i);
    fixed_points += a.At(i) == i;
  }
  // A random permutation has ~1 fixed point and agrees with another at ~1.
  EXPECT_LT(same_as_other_key, 20);
  EXPECT_LT(fixed_points, 20);
}

TEST(FeistelPermutationTest, BillionEntriesWithoutMemory) {
  const EpochOrder order = EpochOrder::Feistel(1000000000, MixKey(7));
  EXPECT_EQ(order.MemoryBytes(), 0u);
  std::set<uint64_t> sample;
  for (uint64_t i = 999999000; i < 1000000000; ++i) {
    const uint64_t v = order.At(i);
    ASSERT_LT(v, 1000000000u);
    sample.insert(v);
  }
  EXPECT_EQ(sample.size(), 1000u);
}

TEST(BlockShuffleTest, IsAPermutationIncludingAShortLastBlock) {
  for (uint64_t n : {1, 7, 100, 1001, 65536, 100003}) {
    for (uint64_t block : {1, 3, 64, 1000}) {
      for (uint64_t window : {1, 2, 8}) {
        ExpectPermutation(BlockShuffle(n, block, window, MixKey(n + block)), n);
      }
    }
  }
}

// A window of window_blocks * block_size consecutive positions draws from
// at most window_blocks blocks: a reader touches few files at a time.
TEST(BlockShuffleTest, AtManyEqualsAt) {
  // Windows of a few blocks (their blocks are cached) and of more blocks
  // than AtMany caches.
  for (const BlockShuffle& shuffle :
       {BlockShuffle(100003, 64, 4, MixKey(9)),
        BlockShuffle(100003, 2, 5000, MixKey(10))}) {
    // Strided like a rank's shard (crossing windows), and the short tail.
    std::vector<uint64_t> entries;
    for (uint64_t i = 5; i < 100003; i += 7) entries.push_back(i);
    entries.push_back(100002);
    std::vector<uint64_t> expected;
    for (uint64_t i : entries) expected.push_back(shuffle.At(i));
    shuffle.AtMany(absl::MakeSpan(entries));
    EXPECT_EQ(entries, expected);
  }
}

TEST(BlockShuffleTest, WindowsTouchFewBlocks) {
  constexpr uint64_t kN = 100000, kBlock = 1000, kWindow = 4;
  const BlockShuffle order(kN, kBlock, kWindow, MixKey(3));
  for (uint64_t start = 0; start < kN; start += kBlock * kWindow) {
    std::set<uint64_t> blocks;
    for (uint64_t i = start; i < std::min(kN, start + kBlock * kWindow); ++i) {
      blocks.insert(order.At(i) / kBlock);
    }
    EXPECT_LE(blocks.size(), kWindow);
  }
  // Blocks are shuffled: the first window is not blocks 0..3.
  std::set<uint64_t> first;
  for (uint64_t i = 0; i < kBlock * kWindow; ++i) {
    first.insert(order.At(i) / kBlock);
  }
  EXPECT_NE(first, (std::set<uint64_t>{0, 1, 2, 3}));
}

// The scalable orders keep the tail policies and the strided split.
TEST(ScalableOrdersTest, CoverageOverAllRanks) {
  for (shard::v1::ShuffleAlgorithm algorithm :
       {shard::v1::SHUFFLE_ALGORITHM_FEISTEL,
        shard::v1::SHUFFLE_ALGORITHM_BLOCK}) {
    shard::v1::JobSpec spec;
    spec.set_dataset_size(1003);
    spec.set_world_size(4);
    spec.set_shuffle_algorithm(algorithm);
    if (algorithm == shard::v1::SHUFFLE_ALGORITHM_BLOCK)
      spec.set_block_size(50);
    for (shard::v1::TailPolicy tail :
         {shard::v1::TAIL_POLICY_PAD, shard::v1::TAIL_POLICY_UNEVEN}) {
      spec.set_tail(tail);
      const absl::StatusOr<shard::v1::JobSpec> normal =
          NormalizeJobSpec(spec, 0);
      ASSERT_TRUE(normal.ok()) << normal.status();  // Needs no memory.
      const EpochOrder order = BuildEpochOrder(*normal, 5);
      const ShardLayout layout = LayoutOf(*normal);
      std::multiset<uint64_t> all;
      for (uint64_t r = 0; r < 4; ++r) {
        std::vector<uint64_t> shard(layout.RankShardSize(r));
        CopyRankIndices(order, layout, r, 0, absl::MakeSpan(shard));
        all.insert(shard.begin(), shard.end());
      }
      EXPECT_EQ(std::set<uint64_t>(all.begin(), all.end()).size(), 1003u);
      EXPECT_EQ(all.size(), layout.total());
    }
  }
}

TEST(ScalableOrdersTest, BlockParametersAreValidated) {
  shard::v1::JobSpec spec;
  spec.set_dataset_size(10);
  spec.set_world_size(1);
  spec.set_shuffle_algorithm(shard::v1::SHUFFLE_ALGORITHM_BLOCK);
  EXPECT_FALSE(NormalizeJobSpec(spec, UINT64_MAX).ok());  // block_size 0
  spec.set_block_size(4);
  EXPECT_EQ(NormalizeJobSpec(spec, UINT64_MAX)->window_blocks(), 8u);
  spec.set_shuffle_algorithm(shard::v1::SHUFFLE_ALGORITHM_TORCH);
  EXPECT_FALSE(NormalizeJobSpec(spec, UINT64_MAX).ok());  // block_size set
}

}  // namespace
}  // namespace shard::plan
