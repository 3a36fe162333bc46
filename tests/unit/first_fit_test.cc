#include "common/plan/batches/first_fit.h"

#include <cstdint>
#include <optional>

#include "gtest/gtest.h"

namespace shard::plan {
namespace {

TEST(FirstFitTest, TheFirstMicroBatchWithRoomWins) {
  FirstFit fit(5, 100);
  EXPECT_EQ(fit.FirstWithRoom(100), 0u);  // nothing started: the first
  fit.Take(0, 70);
  fit.Take(1, 40);
  fit.Take(2, 90);
  EXPECT_EQ(fit.FirstWithRoom(30), 0u);  // 0 has 30 left: exactly enough
  EXPECT_EQ(fit.FirstWithRoom(31), 1u);
  EXPECT_EQ(fit.FirstWithRoom(61), 3u);  // none started has 61: a new one
  fit.Take(0, 30);
  EXPECT_EQ(fit.FirstWithRoom(0), 0u);  // full, but a cost of 0 fits
  EXPECT_EQ(fit.FirstWithRoom(1), 1u);
}

TEST(FirstFitTest, ASampleOverTheBudgetFitsNowhereAndFillsItsOwn) {
  FirstFit fit(3, 100);
  EXPECT_EQ(fit.FirstWithRoom(101), std::nullopt);
  fit.Take(0, 101);  // alone in micro-batch 0
  EXPECT_EQ(fit.FirstWithRoom(0), 1u);
  fit.Take(1, 100);
  fit.Take(2, 100);
  EXPECT_EQ(fit.FirstWithRoom(1), std::nullopt);
}

}  // namespace
}  // namespace shard::plan
