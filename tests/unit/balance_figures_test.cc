// BalanceFigures: a step's imbalance is its largest micro-batch cost over
// the mean; percentiles from buckets of 1/10,000 (at most the largest);
// the padding over every window added.
#include "common/plan/batches/balance_figures.h"

#include <vector>

#include "gtest/gtest.h"

namespace shard::plan {
namespace {

// A window of 2 ranks whose steps' micro-batches cost `costs` (rank 0,
// rank 1, step after step), each micro-batch one sample.
WindowBatches TwoRankWindow(std::vector<uint64_t> costs, uint64_t tokens,
                            uint64_t padded) {
  std::vector<uint64_t> ends;
  for (uint64_t i = 1; i <= costs.size(); ++i) ends.push_back(i);
  WindowCosts window_costs;
  window_costs.of_batches = std::move(costs);
  window_costs.tokens = tokens;
  window_costs.padded_tokens = padded;
  std::vector<uint64_t> positions(ends.size());
  return WindowBatches(2, std::move(positions), std::move(ends),
                       std::move(window_costs));
}

TEST(BalanceFiguresTest, StepsImbalanceAndPadding) {
  BalanceFigures figures;
  EXPECT_EQ(figures.Imbalance(0.5), 0.0);
  // Steps of imbalance 1, 20 / 15 and 30 / 20.
  figures.AddWindow(TwoRankWindow({10, 10, 10, 20}, 50, 60));
  figures.AddWindow(TwoRankWindow({30, 10}, 40, 40));
  EXPECT_EQ(figures.steps(), 3u);
  EXPECT_EQ(figures.samples(), 6u);
  EXPECT_NEAR(figures.Imbalance(0.3), 1.0001, 1e-9);  // its bucket's edge
  EXPECT_NEAR(figures.Imbalance(0.5), 1.3334, 1e-9);  // 1.3333.. rounded up
  EXPECT_DOUBLE_EQ(figures.Imbalance(0.99), 1.5);
  EXPECT_DOUBLE_EQ(figures.max_imbalance(), 1.5);
  EXPECT_DOUBLE_EQ(figures.padding(), 10.0 / 100.0);
}

TEST(BalanceFiguresTest, ImbalanceOfTwoOrMoreIsTheLargest) {
  BalanceFigures figures;
  figures.AddWindow(TwoRankWindow({0, 10, 0, 10, 5, 5}, 1, 1));  // 2, 2, 1
  EXPECT_DOUBLE_EQ(figures.Imbalance(0.5), 2.0);
  EXPECT_DOUBLE_EQ(figures.Imbalance(0.99), 2.0);
  EXPECT_DOUBLE_EQ(figures.max_imbalance(), 2.0);
  // Alone, steps of imbalance 1 are 1, not their bucket's upper edge.
  BalanceFigures even;
  even.AddWindow(TwoRankWindow({7, 7, 3, 3}, 20, 20));
  EXPECT_DOUBLE_EQ(even.Imbalance(0.5), 1.0);
  EXPECT_DOUBLE_EQ(even.padding(), 0.0);
}

// Fill: the real tokens over the budget of every micro-batch (a window of
// 4 micro-batches under a budget of 25: 60 / 100), none with fixed counts.
TEST(BalanceFiguresTest, FillIsTheRealTokensOverTheBudgets) {
  BalanceFigures figures;
  WindowBatches window = TwoRankWindow({10, 20, 10, 20}, 60, 80);
  WindowCosts costs = window.costs();
  costs.capacity = 100;
  std::vector<uint64_t> ends = {1, 2, 3, 4};
  figures.AddWindow(WindowBatches(2, std::vector<uint64_t>(4), std::move(ends),
                                  std::move(costs)));
  EXPECT_DOUBLE_EQ(figures.fill(), 0.6);
  EXPECT_EQ(BalanceProto(figures, 0).fill(), 0.6);
  BalanceFigures counts;
  counts.AddWindow(TwoRankWindow({10, 20}, 30, 40));
  EXPECT_EQ(counts.fill(), 0.0);
}

// x = 1.0005 and 1.0003 exactly: floating point reads (x - 1) x 10,000 as
// 4.99.. and 2.99.., a bucket too low; the figure is exact.
TEST(BalanceFiguresTest, AnExactBucketEdgeRoundsUp) {
  BalanceFigures figures;
  figures.AddWindow(TwoRankWindow({10005, 9995, 10003, 9997, 30, 10}, 1, 1));
  EXPECT_DOUBLE_EQ(figures.Imbalance(0.1), 1.0004);  // 1.0003 rounded up
  EXPECT_DOUBLE_EQ(figures.Imbalance(0.5), 1.0006);  // 1.0005 rounded up
  EXPECT_DOUBLE_EQ(figures.Imbalance(0.99), 1.5);
}

}  // namespace
}  // namespace shard::plan
