// Orders read while they are shuffled: OrderProgress wakes each waiter once
// (passed, or abandoned), a pending shuffle equals the finished torch order
// bit for bit, the readable-index arithmetic matches a brute force over
// every tail and world size, and a cursor that follows a shuffle yields
// exactly the indices of one over the finished order.
#include "common/plan/shuffles/order_progress.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "common/plan/layouts/rank_indices.h"
#include "common/plan/layouts/shard_layout.h"
#include "common/plan/orders/epoch_order.h"
#include "common/plan/shuffles/torch_randperm.h"
#include "gtest/gtest.h"
#include "server/plans/shard_cursor.h"
#include "tests/support/cursor_indices.h"

namespace shard::plan {
namespace {

TEST(OrderProgressTest, AWaiterRunsOnceItsEntryIsFinalAndNotBefore) {
  OrderProgress progress(100);
  std::vector<int> woken;
  progress.WhenFinal(10, [&](absl::Status s) {
    EXPECT_TRUE(s.ok());
    woken.push_back(10);
  });
  progress.WhenFinal(50, [&](absl::Status s) {
    EXPECT_TRUE(s.ok());
    woken.push_back(50);
  });
  progress.Advance(10);  // Entries 0..9: not yet entry 10.
  EXPECT_TRUE(woken.empty());
  progress.Advance(11);
  EXPECT_EQ(woken, std::vector<int>{10});
  progress.WhenFinal(3, [&](absl::Status) { woken.push_back(3); });  // Now.
  EXPECT_EQ(woken, (std::vector<int>{10, 3}));
  progress.Advance(100);
  EXPECT_EQ(woken, (std::vector<int>{10, 3, 50}));
  EXPECT_TRUE(progress.Done());
}

TEST(OrderProgressTest, AbandonTellsEveryWaiterAndEveryLaterOne) {
  OrderProgress progress(100);
  progress.Advance(20);
  absl::Status first, later, final_one;
  progress.WhenFinal(60, [&](absl::Status s) { first = s; });
  progress.Abandon(absl::UnavailableError("stopping"));
  EXPECT_EQ(first.code(), absl::StatusCode::kUnavailable);
  progress.WhenFinal(70, [&](absl::Status s) { later = s; });
  EXPECT_EQ(later.code(), absl::StatusCode::kUnavailable);
  progress.WhenFinal(5, [&](absl::Status s) { final_one = s; });
  EXPECT_TRUE(final_one.ok());  // Entries already final stay readable.
  EXPECT_EQ(progress.AwaitFinal(99, absl::InfiniteFuture()).code(),
            absl::StatusCode::kUnavailable);
}

TEST(OrderProgressTest, AwaitFinalEndsAtItsDeadline) {
  OrderProgress progress(10);
  EXPECT_EQ(progress.AwaitFinal(5, absl::Now() + absl::Milliseconds(20)).code(),
            absl::StatusCode::kDeadlineExceeded);
  progress.Advance(10);
  EXPECT_TRUE(progress.AwaitFinal(5, absl::InfinitePast()).ok());
}

// The pending order stores entry ^ position in zeroed memory; shuffled, it
// reads exactly as the plain port (itself checked against torch), for both
// widths' sizes around the huge-page mapping and for both variants.
TEST(PendingShuffleTest, EqualsThePlainTorchPortBitForBit) {
  for (uint64_t n : {0, 1, 2, 65, 100003, 3000017}) {
    for (RandpermVariant variant :
         {RandpermVariant::kLegacy, RandpermVariant::kTorch26}) {
      std::vector<uint64_t> expected(n);
      TorchRandperm<uint64_t>(11, variant, absl::MakeSpan(expected));
      EpochOrder order = EpochOrder::PendingTorchShuffle(n, 11, variant);
      EXPECT_EQ(order.FinalPrefix(), 0u);
      ASSERT_TRUE(order.Shuffle());
      ASSERT_EQ(order.FinalPrefix(), n);
      for (uint64_t i = 0; i < n; ++i) {
        ASSERT_EQ(order.At(i), expected[i]) << "n=" << n << " i=" << i;
      }
    }
  }
}

// The torch >= 2.6 inside-out shuffle (threshold lowered) over zeroed
// entries: nothing final before its end, then the plain port's result.
TEST(PendingShuffleTest, TheInsideOutShuffleIsFinalOnlyAtItsEnd) {
  for (uint64_t n : {1, 2, 65, 4099, 1000003}) {
    std::vector<uint64_t> expected(n);
    internal::TorchRandpermWithThreshold(9, RandpermVariant::kTorch26, 1,
                                         absl::MakeSpan(expected));
    std::vector<uint64_t> zeroed(n, 0);
    OrderProgress progress(n);
    std::unique_ptr<PendingTorchRandperm> shuffle =
        internal::StartTorchRandpermWithThreshold(
            9, RandpermVariant::kTorch26, 1, absl::MakeSpan(zeroed), &progress);
    shuffle->Front();
    EXPECT_EQ(progress.Final(), 0u) << "n=" << n;
    ASSERT_TRUE(shuffle->Rest(nullptr));
    EXPECT_EQ(progress.Final(), n);
    for (uint64_t i = 0; i < n; ++i) {
      ASSERT_EQ(zeroed[i] ^ i, expected[i]) << "n=" << n << " i=" << i;
    }
  }
}

// Front() alone makes the first entries final (and right), touching only
// the front of the memory; Rest() then finishes the same permutation.
TEST(PendingShuffleTest, TheFrontIsFinalBeforeTheRest) {
  const uint64_t n = 3000017;
  std::vector<uint64_t> expected(n);
  TorchRandperm<uint64_t>(4, RandpermVariant::kLegacy,
                          absl::MakeSpan(expected));
  EpochOrder order =
      EpochOrder::PendingTorchShuffle(n, 4, RandpermVariant::kLegacy);
  order.ShuffleFront();
  const uint64_t front = order.FinalPrefix();
  EXPECT_GE(front, uint64_t{1} << 17);
  EXPECT_LT(front, n);
  for (uint64_t i = 0; i < front; ++i) {
    ASSERT_EQ(order.At(i), expected[i]) << "i=" << i;
  }
  ASSERT_TRUE(order.Shuffle());
  for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(order.At(i), expected[i]);
}

TEST(PendingShuffleTest, EntriesAreFinalFromTheFrontAsTheShuffleGoes) {
  const uint64_t n = uint64_t{1} << 22;
  std::vector<uint64_t> expected(n);
  TorchRandperm<uint64_t>(3, RandpermVariant::kLegacy,
                          absl::MakeSpan(expected));
  EpochOrder order =
      EpochOrder::PendingTorchShuffle(n, 3, RandpermVariant::kLegacy);
  // Every report: the entries it declares final already hold their values.
  uint64_t reports = 0;
  bool all_final = true;
  std::function<void(uint64_t)> check = [&](uint64_t entry) {
    order.progress()->WhenFinal(entry, [&, entry](absl::Status s) {
      ASSERT_TRUE(s.ok());
      ++reports;
      const uint64_t final_prefix = order.progress()->Final();
      for (uint64_t i = entry; i < final_prefix; i += 997) {
        all_final = all_final && order.At(i) == expected[i];
      }
      if (final_prefix < n) check(final_prefix);
    });
  };
  check(0);
  ASSERT_TRUE(order.Shuffle());
  EXPECT_TRUE(all_final);
  EXPECT_GT(reports, 100u);  // Followed in many steps, not at the end.
}

TEST(PendingShuffleTest, ACancelledShuffleStopsUnfinished) {
  std::atomic<bool> cancelled{true};
  EpochOrder order = EpochOrder::PendingTorchShuffle(uint64_t{1} << 21, 1,
                                                     RandpermVariant::kLegacy);
  EXPECT_FALSE(order.Shuffle(&cancelled));
  EXPECT_LT(order.FinalPrefix(), order.size());
}

// IndicesReadable and EntriesNeeded against a brute force over the rank's
// positions, for every tail, world sizes up to past N, bases, offsets and
// final prefixes.
TEST(RankIndicesTest, ReadableCountsAndNeededEntriesMatchABruteForce) {
  for (Tail tail : {Tail::kPad, Tail::kDrop, Tail::kUneven}) {
    for (uint64_t n : {1, 7, 16, 23}) {
      for (uint64_t w : {1, 3, 8, 30}) {
        for (uint64_t base : {uint64_t{0}, n / 2}) {
          const ShardLayout layout(n, w, tail, base);
          for (uint64_t rank = 0; rank < w; ++rank) {
            const uint64_t size = layout.RankShardSize(rank);
            for (uint64_t offset = 0; offset <= size; ++offset) {
              for (uint64_t final_prefix = 0; final_prefix <= n;
                   ++final_prefix) {
                uint64_t readable = 0;
                while (offset + readable < size &&
                       layout.OrderIndexOf(layout.PositionOf(
                           rank, offset + readable)) < final_prefix) {
                  ++readable;
                }
                ASSERT_EQ(IndicesReadable(layout, rank, offset, final_prefix),
                          readable)
                    << "n=" << n << " w=" << w << " rank=" << rank
                    << " offset=" << offset << " final=" << final_prefix;
              }
              for (uint64_t count = 0; offset + count <= size; ++count) {
                uint64_t needed = 0;
                for (uint64_t k = offset; k < offset + count; ++k) {
                  needed = std::max(
                      needed,
                      layout.OrderIndexOf(layout.PositionOf(rank, k)) + 1);
                }
                ASSERT_EQ(EntriesNeeded(layout, rank, offset, count), needed)
                    << "n=" << n << " w=" << w << " rank=" << rank;
              }
            }
          }
        }
      }
    }
  }
}

// A cursor opened on an order before its shuffle started yields, while the
// shuffle runs on another thread, exactly what a cursor over the finished
// order yields: every tail, world sizes 1, 7, 8 and 1000, mid-epoch starts.
TEST(CursorDuringShuffleTest, YieldsTheFinishedOrdersIndices) {
  const uint64_t n = 1000003;
  const auto finished = std::make_shared<const EpochOrder>(
      EpochOrder::TorchShuffled(n, 5, RandpermVariant::kLegacy));
  for (Tail tail : {Tail::kPad, Tail::kDrop, Tail::kUneven}) {
    for (uint64_t w : {1, 7, 8, 1000}) {
      const ShardLayout layout(n, w, tail, /*base=*/0);
      for (uint32_t rank : {uint32_t{0}, static_cast<uint32_t>(w - 1)}) {
        const uint64_t begin = layout.RankShardSize(rank) / 3;
        server::ShardCursor reference(finished, layout, rank, begin, 4096);
        const std::vector<uint64_t> expected =
            testing::CursorIndices(reference);
        auto pending = std::make_shared<EpochOrder>(
            EpochOrder::PendingTorchShuffle(n, 5, RandpermVariant::kLegacy));
        server::ShardCursor cursor(pending, layout, rank, begin, 4096);
        EXPECT_TRUE(cursor.Awaits().has_value());  // Nothing final yet.
        std::thread shuffle([pending] { pending->Shuffle(); });
        const std::vector<uint64_t> got = testing::CursorIndices(cursor);
        shuffle.join();
        ASSERT_EQ(got, expected) << "tail=" << static_cast<int>(tail)
                                 << " w=" << w << " rank=" << rank;
      }
    }
  }
}

}  // namespace
}  // namespace shard::plan
