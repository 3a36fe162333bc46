// SharedWindows: each window arranged once for the ranks of a world (a
// rank asking meanwhile waits for it; a failed arrangement is left to the
// next rank; one arranged ahead is taken like the others), kept until
// every rank took it or the bytes kept pass their bound (then arranged
// again for a rank that asks), and SharedWindowTable giving the streams of
// one world the same windows, a pinned world's until its first stream.
#include "server/plans/shared_windows.h"

#include <atomic>
#include <memory>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/plan/batches/epoch_worlds.h"
#include "gtest/gtest.h"
#include "server/plans/shared_window_table.h"

namespace shard::server {
namespace {

// A window of `samples` positions for `world` ranks, one step.
plan::WindowBatches WindowOf(uint32_t world, uint64_t samples) {
  std::vector<uint64_t> positions(samples);
  std::vector<uint64_t> ends;
  for (uint32_t r = 1; r <= world; ++r) ends.push_back(samples * r / world);
  plan::WindowCosts costs;
  costs.of_batches.assign(world, 1);
  return plan::WindowBatches(world, std::move(positions), std::move(ends),
                             std::move(costs));
}

class SharedWindowsTest : public ::testing::Test {
 protected:
  SharedWindows::Window Take(SharedWindows& windows, uint64_t window,
                             uint32_t rank) {
    return windows.Take(window, rank, [&] { return WindowOf(kWorld, 64); });
  }

  static constexpr uint32_t kWorld = 4;
  std::shared_ptr<std::atomic<uint64_t>> arranged_ =
      std::make_shared<std::atomic<uint64_t>>(0);
};

TEST_F(SharedWindowsTest, EachWindowIsArrangedOnceForTheWorld) {
  SharedWindows windows(kWorld, uint64_t{1} << 20, arranged_);
  for (uint64_t w = 0; w < 10; ++w) {
    const SharedWindows::Window first = Take(windows, w, 0);
    for (uint32_t rank = 1; rank < kWorld; ++rank) {
      EXPECT_EQ(Take(windows, w, rank), first) << "window " << w;
    }
  }
  EXPECT_EQ(arranged_->load(), 10u);
}

TEST_F(SharedWindowsTest, ARankWaitsForTheArrangementUnderWay) {
  SharedWindows windows(kWorld, uint64_t{1} << 20, arranged_);
  absl::Notification arranging;
  absl::Notification finish;
  SharedWindows::Window first;
  std::thread rank0([&] {
    first = windows.Take(0, 0, [&] {
      arranging.Notify();
      finish.WaitForNotification();
      return WindowOf(kWorld, 64);
    });
  });
  arranging.WaitForNotification();
  SharedWindows::Window second;
  std::thread rank1([&] { second = Take(windows, 0, 1); });
  absl::SleepFor(absl::Milliseconds(50));  // rank 1 asks meanwhile
  finish.Notify();
  rank0.join();
  rank1.join();
  EXPECT_EQ(first, second);
  EXPECT_EQ(arranged_->load(), 1u);
}

TEST_F(SharedWindowsTest, AFailedArrangementLeavesTheWindowToTheNext) {
  SharedWindows windows(kWorld, uint64_t{1} << 20, arranged_);
  EXPECT_THROW(
      windows.Take(0, 0,
                   []() -> plan::WindowBatches { throw std::bad_alloc(); }),
      std::bad_alloc);
  EXPECT_NE(Take(windows, 0, 0), nullptr);
  EXPECT_EQ(arranged_->load(), 1u);
}

TEST_F(SharedWindowsTest, AWindowGoesOnceEveryRankTookIt) {
  SharedWindows windows(kWorld, uint64_t{1} << 20, arranged_);
  // Rank 0 twice (a re-opened stream) is one taker: still kept for 3.
  Take(windows, 0, 0);
  Take(windows, 0, 0);
  Take(windows, 0, 1);
  Take(windows, 0, 2);
  EXPECT_EQ(arranged_->load(), 1u);
  Take(windows, 0, 3);  // the last rank: dropped
  EXPECT_EQ(arranged_->load(), 1u);
  Take(windows, 0, 1);  // a rank that re-reads it arranges it again
  EXPECT_EQ(arranged_->load(), 2u);
}

TEST_F(SharedWindowsTest, TheNewestGoFirstPastTheBound) {
  const uint64_t one = WindowOf(kWorld, 64).MemoryBytes();
  SharedWindows windows(kWorld, 3 * one, arranged_);
  for (uint64_t w = 0; w < 6; ++w) Take(windows, w, 0);  // keeps 0, 1, 2
  EXPECT_EQ(arranged_->load(), 6u);
  Take(windows, 0, 1);
  Take(windows, 2, 1);
  EXPECT_EQ(arranged_->load(), 6u);
  Take(windows, 5, 1);  // dropped: arranged again, not kept (the newest)
  EXPECT_EQ(arranged_->load(), 7u);
  Take(windows, 5, 2);
  EXPECT_EQ(arranged_->load(), 8u);
  // Every rank takes window 0: dropped, so window 5 fits next to 1 and 2.
  Take(windows, 0, 2);
  Take(windows, 0, 3);
  Take(windows, 5, 3);
  Take(windows, 5, 0);
  EXPECT_EQ(arranged_->load(), 9u);
}

TEST_F(SharedWindowsTest, AWindowOverTheBoundIsServedButNotKept) {
  SharedWindows windows(kWorld, /*max_bytes=*/0, arranged_);
  const SharedWindows::Window first = Take(windows, 0, 0);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->samples(), 64u);
  EXPECT_NE(Take(windows, 0, 1), first);
  EXPECT_EQ(arranged_->load(), 2u);
}

TEST_F(SharedWindowsTest, AWindowArrangedAheadIsTakenByEveryRank) {
  SharedWindows windows(kWorld, uint64_t{1} << 20, arranged_);
  windows.ArrangeAhead(0, [&] { return WindowOf(kWorld, 64); });
  windows.ArrangeAhead(0, [&] { return WindowOf(kWorld, 64); });  // kept
  EXPECT_EQ(arranged_->load(), 1u);
  const SharedWindows::Window first = Take(windows, 0, 0);
  for (uint32_t rank = 1; rank < kWorld; ++rank) {
    EXPECT_EQ(Take(windows, 0, rank), first);
  }
  EXPECT_EQ(arranged_->load(), 1u);
  Take(windows, 0, 0);  // every rank took it: dropped
  EXPECT_EQ(arranged_->load(), 2u);
  // Late: a rank asked for it already (it was arranged for the ranks,
  // perhaps dropped since).
  windows.ArrangeAhead(0, [&] { return WindowOf(kWorld, 64); });
  EXPECT_EQ(arranged_->load(), 2u);
}

// The worlds `links` of an epoch of 1,000 samples.
plan::EpochWorlds Worlds(std::vector<plan::EpochLink> links) {
  plan::BatchPolicy policy;
  policy.batch_tokens = 100;
  return plan::EpochWorlds(1000, plan::Tail::kPad, policy, std::move(links));
}

TEST(SharedWindowTableTest, OneWorldsStreamsShareTheirWindows) {
  SharedWindowTable table;
  const plan::EpochWorlds four = Worlds({plan::EpochLink{0, 4}});
  const plan::EpochWorlds resized =
      Worlds({plan::EpochLink{0, 4}, plan::EpochLink{200, 2}});
  std::shared_ptr<SharedWindows> a = table.For(7, 1, four, nullptr);
  EXPECT_EQ(table.For(7, 1, four, nullptr), a);
  EXPECT_NE(table.For(7, 2, four, nullptr), a);  // another epoch
  EXPECT_NE(table.For(8, 1, four, nullptr), a);  // another incarnation
  EXPECT_NE(table.For(7, 1, resized, nullptr),
            a);  // another world of the epoch
  // Nobody holds the others: dropped as new worlds are made.
  for (uint64_t job = 100; job < 140; ++job) table.For(job, 0, four, nullptr);
  EXPECT_LT(table.size(), 40u);
  EXPECT_EQ(table.For(7, 1, four, nullptr), a);
}

// A pinned world outlives its holders until a stream asks for it; the
// oldest pin goes first past kMaxPinned.
TEST(SharedWindowTableTest, APinnedWorldWaitsForItsFirstStream) {
  SharedWindowTable table;
  const plan::EpochWorlds four = Worlds({plan::EpochLink{0, 4}});
  SharedWindows* pinned = table.Pin(7, 0, four, nullptr).get();
  EXPECT_EQ(table.pinned(), 1u);
  std::shared_ptr<SharedWindows> stream = table.For(7, 0, four, nullptr);
  EXPECT_EQ(stream.get(), pinned);  // nobody else held it meanwhile
  EXPECT_EQ(table.pinned(), 0u);
  std::vector<std::weak_ptr<SharedWindows>> pins;
  for (uint64_t job = 0; job <= SharedWindowTable::kMaxPinned; ++job) {
    pins.push_back(table.Pin(100 + job, 0, four, nullptr));
  }
  EXPECT_EQ(table.pinned(), SharedWindowTable::kMaxPinned);
  EXPECT_TRUE(pins.front().expired());  // the oldest pin was let go
  EXPECT_FALSE(pins.back().expired());
}

}  // namespace
}  // namespace shard::server
