#include "common/plan/batches/first_fit.h"

#include <cstdint>

#include "gtest/gtest.h"

namespace shard::plan {
namespace {

TEST(FirstFitTest, TheFirstMicroBatchWithRoomWins) {
  FirstFit fit(100, 5);
  EXPECT_EQ(fit.Place(70), 0u);  // nothing started: the first
  EXPECT_EQ(fit.Place(40), 1u);  // 0 has 30 left
  EXPECT_EQ(fit.Place(90), 2u);
  EXPECT_EQ(fit.Place(30), 0u);  // exactly enough
  EXPECT_EQ(fit.Place(31), 1u);  // 1 had 60
  EXPECT_EQ(fit.Place(61), 3u);  // none started has 61: a new one
  EXPECT_EQ(fit.Place(0), 0u);   // 0 is full, but a cost of 0 fits
  EXPECT_EQ(fit.Place(1), 1u);   // 1 has 29, 2 has 10: 1 is first
  EXPECT_EQ(fit.started(), 4u);
}

TEST(FirstFitTest, ASampleOverTheBudgetFillsItsOwn) {
  FirstFit fit(100, 3);
  EXPECT_EQ(fit.Place(101), 0u);  // alone in micro-batch 0
  EXPECT_EQ(fit.Place(0), 1u);    // 0 has no room even for a cost of 0
  EXPECT_EQ(fit.Place(100), 1u);
  EXPECT_EQ(fit.Place(1), 2u);
}

// More micro-batches than the tree was made for: it grows, and the first
// fit is still found among all of them.
TEST(FirstFitTest, TheTreeGrowsPastWhatWasExpected) {
  FirstFit fit(10, 1);
  for (uint64_t b = 0; b < 37; ++b) EXPECT_EQ(fit.Place(8), b);
  EXPECT_EQ(fit.Place(3), 37u);  // every one has 2 left
  EXPECT_EQ(fit.Place(2), 0u);
  EXPECT_EQ(fit.Place(2), 1u);
  EXPECT_EQ(fit.Place(7), 37u);  // 37 has 7 left
  EXPECT_EQ(fit.started(), 38u);
}

}  // namespace
}  // namespace shard::plan
