#include "common/plan/batches/epoch_worlds.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/plan/batches/epoch_rest.h"
#include "gtest/gtest.h"

namespace shard::plan {
namespace {

std::vector<uint64_t> AllOf(const EpochRest& rest) {
  std::vector<uint64_t> positions(rest.size());
  rest.Positions(0, absl::MakeSpan(positions));
  return positions;
}

TEST(EpochRestTest, HeadThenRangeAndPaddingAfterTheRange) {
  const EpochRest rest({2, 5}, 7, 10);
  EXPECT_EQ(AllOf(rest), (std::vector<uint64_t>{2, 5, 7, 8, 9}));
  EXPECT_EQ(AllOf(rest.Resized(7)),
            (std::vector<uint64_t>{2, 5, 7, 8, 9, 10, 11}));
  EXPECT_EQ(AllOf(rest.Resized(3)), (std::vector<uint64_t>{2, 5, 7}));
  const EpochRest cut = rest.Resized(1);
  EXPECT_EQ(AllOf(cut), (std::vector<uint64_t>{2}));
  // Padding after a cut into the head goes where it would have gone.
  EXPECT_EQ(AllOf(cut.Resized(2)), (std::vector<uint64_t>{2, 10}));
}

TEST(EpochRestTest, ReplacedKeepsTheRestAfterTheTakenSorted) {
  const EpochRest rest({2, 5}, 7, 10);
  EXPECT_EQ(AllOf(rest.Replaced(1, {3, 1})),
            (std::vector<uint64_t>{1, 3, 5, 7, 8, 9}));
  EXPECT_EQ(AllOf(rest.Replaced(4, {8, 0})), (std::vector<uint64_t>{0, 8, 9}));
  EXPECT_EQ(AllOf(rest.Replaced(5, {})), (std::vector<uint64_t>{}));
}

BatchPolicy Tokens(uint64_t budget, uint64_t window) {
  BatchPolicy policy;
  policy.batch_tokens = budget;
  policy.window = window;
  return policy;
}

// Costs i mod 37 + 1 over the identity order.
void CostsOfPositions(absl::Span<const uint64_t> positions,
                      absl::Span<uint32_t> costs) {
  for (size_t k = 0; k < positions.size(); ++k) {
    costs[k] = positions[k] % 37 + 1;
  }
}

// The order positions of the first `count` samples `batches` serves, in
// the order it serves them.
std::vector<uint64_t> ServedPrefix(const EpochBatches& batches,
                                   uint64_t count) {
  std::vector<uint64_t> served;
  for (uint64_t w = 0; w < batches.windows() && served.size() < count; ++w) {
    const WindowBatches window =
        batches.Arrange(w, CostsOfPositions, /*seed=*/3, /*epoch=*/1);
    for (uint64_t p : window.positions()) {
      if (served.size() == count) break;
      served.push_back(p);
    }
  }
  return served;
}

// A step end of `batches` at least `at` samples from its base.
uint64_t StepEndFrom(const EpochBatches& batches, uint64_t at) {
  const uint64_t window = batches.WindowOf(batches.base() + at);
  const WindowBatches arranged =
      batches.Arrange(window, CostsOfPositions, 3, 1);
  for (uint64_t step = 0; step <= arranged.steps(); ++step) {
    const uint64_t end = batches.WindowBegin(window) +
                         (step == arranged.steps() ? arranged.samples()
                                                   : arranged.StepBegin(step));
    if (end >= batches.base() + at) return end;
  }
  return batches.total();
}

TEST(EpochWorldsTest, ResizedWorldsServeEveryPositionOnce) {
  const BatchPolicy policy = Tokens(120, 64);
  const EpochWorlds first(1000, Tail::kPad, policy, {{0, 4}});
  const EpochBatches four = first.Resolve(nullptr, 3, 1);
  const uint64_t at_four = StepEndFrom(four, 150);  // inside window 2
  const EpochWorlds second(1000, Tail::kPad, policy, {{0, 4}, {at_four, 3}});
  const EpochBatches three = second.Resolve(CostsOfPositions, 3, 1);
  EXPECT_EQ(three.base(), at_four);
  EXPECT_EQ(three.total(), second.total());
  const uint64_t at_three = StepEndFrom(three, 300);
  const EpochWorlds third(1000, Tail::kPad, policy,
                          {{0, 4}, {at_four, 3}, {at_three, 5}});
  const EpochBatches five = third.Resolve(CostsOfPositions, 3, 1);
  EXPECT_EQ(five.total(), third.total());

  std::vector<uint64_t> served = ServedPrefix(four, at_four);
  const std::vector<uint64_t> by_three =
      ServedPrefix(three, at_three - at_four);
  const std::vector<uint64_t> by_five = ServedPrefix(five, five.rest().size());
  served.insert(served.end(), by_three.begin(), by_three.end());
  served.insert(served.end(), by_five.begin(), by_five.end());
  EXPECT_EQ(served.size(), third.total());
  std::sort(served.begin(), served.end());
  for (uint64_t i = 0; i < 1000; ++i) ASSERT_EQ(served[i], i);
  for (uint64_t i = 1000; i < served.size(); ++i) {
    EXPECT_GE(served[i], 1000u);  // padding only: positions past the order
  }
}

TEST(EpochWorldsTest, LaterWorldsNumberWindowsAfterTheOneTheirPredecessorLeft) {
  const BatchPolicy policy = Tokens(120, 64);
  const EpochBatches four =
      EpochWorlds(1000, Tail::kPad, policy, {{0, 4}}).Resolve(nullptr, 3, 1);
  EXPECT_EQ(four.NumberOf(0), 0u);
  const uint64_t at = StepEndFrom(four, 150);
  const EpochBatches three =
      EpochWorlds(1000, Tail::kPad, policy, {{0, 4}, {at, 3}})
          .Resolve(CostsOfPositions, 3, 1);
  EXPECT_EQ(three.NumberOf(0), four.WindowOf(at) + 1);
}

TEST(EpochWorldsTest, AWorldFromTheEpochsEndServesNothing) {
  const BatchPolicy policy = Tokens(120, 64);
  const EpochWorlds worlds(130, Tail::kPad, policy, {{0, 4}, {132, 2}});
  EXPECT_EQ(worlds.total(), 132u);
  const EpochBatches last = worlds.Resolve(CostsOfPositions, 0, 0);
  EXPECT_EQ(last.windows(), 0u);
  EXPECT_EQ(last.total(), 132u);
}

TEST(EpochWorldsTest, TheTailRuleAppliesToEachWorldsRest) {
  const BatchPolicy policy = Tokens(1000, 64);
  // 130 samples for 4: 64, 64 and 2 padded to 4. A world of 8 from 128
  // gets the 4 left, padded to 8; with the drop tail 2 are left, dropped.
  // A world of 8 from 100 (drop) gets 28, cut to 24: a multiple of 8.
  EXPECT_EQ(EpochWorlds(130, Tail::kPad, policy, {{0, 4}, {128, 8}}).total(),
            136u);
  EXPECT_EQ(EpochWorlds(130, Tail::kDrop, policy, {{0, 4}, {100, 8}}).total(),
            124u);
  EXPECT_EQ(EpochWorlds(130, Tail::kDrop, policy, {{0, 4}, {124, 8}}).total(),
            124u);
}

}  // namespace
}  // namespace shard::plan
