#include "common/plan/layouts/shard_layout.h"

#include <cstdint>
#include <map>
#include <vector>

#include "common/plan/layouts/rank_indices.h"
#include "common/plan/orders/epoch_order.h"
#include "gtest/gtest.h"

namespace shard::plan {
namespace {

TEST(ShardLayoutTest, TotalsFollowDistributedSampler) {
  // N=10, W=3: pad -> 4 per rank (12), drop -> 3 per rank (9), uneven -> 10.
  EXPECT_EQ(ShardLayout(10, 3, Tail::kPad).total(), 12u);
  EXPECT_EQ(ShardLayout(10, 3, Tail::kDrop).total(), 9u);
  EXPECT_EQ(ShardLayout(10, 3, Tail::kUneven).total(), 10u);
  // Divisible: all policies agree.
  for (Tail tail : {Tail::kPad, Tail::kDrop, Tail::kUneven}) {
    EXPECT_EQ(ShardLayout(12, 4, tail).total(), 12u);
  }
}

TEST(ShardLayoutTest, FewerSamplesThanRanks) {
  // N=3, W=5: pad gives every rank one sample; drop gives nothing.
  const ShardLayout pad(3, 5, Tail::kPad);
  EXPECT_EQ(pad.total(), 5u);
  for (uint64_t r = 0; r < 5; ++r) EXPECT_EQ(pad.RankShardSize(r), 1u);
  EXPECT_EQ(pad.OrderIndexOf(4), 1u);  // Wraps to the order's start.
  const ShardLayout drop(3, 5, Tail::kDrop);
  EXPECT_EQ(drop.total(), 0u);
  EXPECT_EQ(drop.RankShardSize(0), 0u);
  const ShardLayout uneven(3, 5, Tail::kUneven);
  EXPECT_EQ(uneven.RankShardSize(2), 1u);
  EXPECT_EQ(uneven.RankShardSize(3), 0u);
}

TEST(ShardLayoutTest, UnevenRankSizesDifferByAtMostOne) {
  const ShardLayout layout(10, 4, Tail::kUneven);
  EXPECT_EQ(layout.RankShardSize(0), 3u);
  EXPECT_EQ(layout.RankShardSize(1), 3u);
  EXPECT_EQ(layout.RankShardSize(2), 2u);
  EXPECT_EQ(layout.RankShardSize(3), 2u);
}

TEST(ShardLayoutTest, SingleRankGetsEverything) {
  for (Tail tail : {Tail::kPad, Tail::kDrop, Tail::kUneven}) {
    EXPECT_EQ(ShardLayout(7, 1, tail).RankShardSize(0), 7u);
  }
}

// Coverage over all ranks of an epoch: uneven covers 0..N-1 exactly once,
// pad covers it with exactly total - N repeats, drop has no duplicate.
TEST(ShardLayoutTest, CoverageOverAllRanks) {
  for (uint64_t n : {1, 2, 5, 10, 97, 100, 1001}) {
    for (uint64_t w : {1, 2, 3, 4, 7, 8, 16, 150}) {
      const EpochOrder order =
          EpochOrder::TorchShuffled(n, n + w, RandpermVariant::kLegacy);
      for (Tail tail : {Tail::kPad, Tail::kDrop, Tail::kUneven}) {
        const ShardLayout layout(n, w, tail);
        std::map<uint64_t, int> seen;
        uint64_t handed_out = 0;
        for (uint64_t r = 0; r < w; ++r) {
          std::vector<uint64_t> shard(layout.RankShardSize(r));
          CopyRankIndices(order, layout, r, 0, absl::MakeSpan(shard));
          for (uint64_t index : shard) ++seen[index];
          handed_out += shard.size();
        }
        SCOPED_TRACE(testing::Message() << "N=" << n << " W=" << w
                                        << " tail=" << static_cast<int>(tail));
        EXPECT_EQ(handed_out, layout.total());
        uint64_t duplicates = 0;
        for (const auto& [index, count] : seen) {
          ASSERT_LT(index, n);
          duplicates += count - 1;
        }
        switch (tail) {
          case Tail::kUneven:
            EXPECT_EQ(seen.size(), n);
            EXPECT_EQ(duplicates, 0u);
            break;
          case Tail::kPad:
            EXPECT_EQ(seen.size(), n);
            EXPECT_EQ(duplicates, layout.total() - n);
            break;
          case Tail::kDrop:
            EXPECT_EQ(duplicates, 0u);
            EXPECT_EQ(seen.size(), n - n % w);
            break;
        }
      }
    }
  }
}

TEST(RankIndicesTest, ReadsFromAnOffset) {
  const EpochOrder order = EpochOrder::Identity(10);
  const ShardLayout layout(10, 3, Tail::kPad);
  std::vector<uint64_t> tail(2);
  CopyRankIndices(order, layout, 2, 2, absl::MakeSpan(tail));
  // Rank 2 owns positions 2, 5, 8, 11; position 11 wraps to index 1.
  EXPECT_EQ(tail, (std::vector<uint64_t>{8, 1}));
}

}  // namespace
}  // namespace shard::plan
