#include "common/plan/batches/window_batches.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "common/plan/batches/epoch_batches.h"
#include "gtest/gtest.h"

namespace shard::plan {
namespace {

std::vector<WindowEntry> Entries(const std::vector<uint32_t>& costs) {
  std::vector<WindowEntry> entries;
  for (uint64_t p = 0; p < costs.size(); ++p) entries.push_back({p, costs[p]});
  return entries;
}

BatchPolicy Tokens(uint64_t budget) {
  BatchPolicy policy;
  policy.batch_tokens = budget;
  return policy;
}

uint64_t PaddedCost(const WindowBatches& batches,
                    const std::vector<uint32_t>& costs, uint64_t step,
                    uint32_t rank) {
  uint32_t longest = 0;
  for (uint64_t i = batches.BatchBegin(step, rank);
       i < batches.BatchEnd(step, rank); ++i) {
    longest = std::max(longest, costs[batches.positions()[i]]);
  }
  return longest *
         (batches.BatchEnd(step, rank) - batches.BatchBegin(step, rank));
}

// `count` lognormal(mu, sigma) costs of at least 1 (Box-Muller over
// mt19937_64: the same on every platform).
std::vector<uint32_t> LognormalCosts(uint64_t count, double mu, double sigma,
                                     uint64_t seed) {
  std::mt19937_64 random(seed);
  const auto uniform = [&random] {
    return (static_cast<double>(random() >> 11) + 0.5) * 0x1.0p-53;
  };
  std::vector<uint32_t> costs;
  for (uint64_t i = 0; i < count; ++i) {
    const double normal =
        std::sqrt(-2 * std::log(uniform())) * std::cos(2 * M_PI * uniform());
    costs.push_back(static_cast<uint32_t>(
        std::min(60000.0, std::max(1.0, std::exp(mu + sigma * normal)))));
  }
  return costs;
}

// Each step's imbalance (its micro-batches' largest cost over their mean),
// in training order.
std::vector<double> StepImbalances(const WindowBatches& batches,
                                   uint32_t world) {
  std::vector<double> imbalances;
  for (uint64_t step = 0; step < batches.steps(); ++step) {
    uint64_t most = 0;
    uint64_t sum = 0;
    for (uint32_t rank = 0; rank < world; ++rank) {
      const uint64_t cost = batches.costs().of_batches[step * world + rank];
      most = std::max(most, cost);
      sum += cost;
    }
    imbalances.push_back(static_cast<double>(most) * world / sum);
  }
  return imbalances;
}

TEST(WindowBatchesTest, EveryStepGivesEveryRankSamplesAndEverySampleOnce) {
  std::vector<uint32_t> costs;
  for (uint32_t i = 0; i < 1002; ++i) costs.push_back(16 + (i * 7919) % 1009);
  const WindowBatches batches =
      ArrangeWindow(Entries(costs), 6, Tokens(4096), StepOrderKey(1, 0, 0));
  ASSERT_GT(batches.steps(), 1u);
  for (uint64_t step = 0; step < batches.steps(); ++step) {
    for (uint32_t rank = 0; rank < 6; ++rank) {
      EXPECT_LT(batches.BatchBegin(step, rank), batches.BatchEnd(step, rank));
    }
  }
  std::vector<uint64_t> served = batches.positions();
  std::sort(served.begin(), served.end());
  for (uint64_t p = 0; p < costs.size(); ++p) ASSERT_EQ(served[p], p);
}

TEST(WindowBatchesTest, StepsCostNearlyTheSameAcrossRanks) {
  std::vector<uint32_t> costs;
  for (uint32_t i = 0; i < 20000; ++i)
    costs.push_back(16 + (i * 104729) % 1009);
  const WindowBatches batches =
      ArrangeWindow(Entries(costs), 8, Tokens(8192), StepOrderKey(1, 0, 0));
  for (uint64_t step = 0; step < batches.steps(); ++step) {
    uint64_t most = 0;
    uint64_t least = UINT64_MAX;
    for (uint32_t rank = 0; rank < 8; ++rank) {
      most = std::max(most, PaddedCost(batches, costs, step, rank));
      least = std::min(least, PaddedCost(batches, costs, step, rank));
    }
    EXPECT_LE(most, 8192u);
    EXPECT_LE(most * 100, least * 110) << "step " << step;
  }
}

// The window's leftover micro-batches (M mod W of them, the cheapest
// samples) are dealt so that the steps they end up in are as even as the
// window's other steps (their median), never one much more uneven step:
// token budgets and fixed counts, small and large worlds.
TEST(WindowBatchesTest, TheLeftoverStepsAreAsEvenAsTheRest) {
  struct Case {
    uint32_t world;
    BatchPolicy policy;
    double sigma;
  };
  BatchPolicy count32;
  count32.batch_size = 32;
  for (const Case& c : {Case{8, Tokens(8192), 1.2}, Case{64, Tokens(8192), 1.2},
                        Case{16, Tokens(4096), 1.0}, Case{64, count32, 1.6},
                        Case{16, count32, 1.6}}) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      const std::vector<uint32_t> costs =
          LognormalCosts(20032, 5, c.sigma, seed);  // 313 x 64
      const WindowBatches batches = ArrangeWindow(
          Entries(costs), c.world, c.policy, StepOrderKey(seed, 0, 0));
      const std::vector<double> imbalances = StepImbalances(batches, c.world);
      // The step holding the window's cheapest sample is a leftover one.
      const uint64_t cheapest = static_cast<uint64_t>(
          std::min_element(costs.begin(), costs.end()) - costs.begin());
      const uint64_t at =
          static_cast<uint64_t>(std::find(batches.positions().begin(),
                                          batches.positions().end(), cheapest) -
                                batches.positions().begin());
      uint64_t leftover_step = 0;
      while (batches.BatchEnd(leftover_step, c.world - 1) <= at) {
        ++leftover_step;
      }
      std::vector<double> sorted = imbalances;
      std::sort(sorted.begin(), sorted.end());
      const double median = sorted[sorted.size() / 2];
      EXPECT_LE(imbalances[leftover_step], std::max(1.02, median))
          << "W " << c.world << " tokens " << c.policy.batch_tokens << " count "
          << c.policy.batch_size << " seed " << seed
          << ": the leftover step is more uneven than the window's median "
          << median;
    }
  }
}

// The largest cost of a micro-batch of `batches` over `costs` (under
// `policy`'s model) among those of two or more samples; 0 without any.
uint64_t LargestSharedBatch(const WindowBatches& batches,
                            const std::vector<uint32_t>& costs,
                            const BatchPolicy& policy) {
  uint64_t largest = 0;
  for (uint64_t step = 0; step < batches.steps(); ++step) {
    for (uint32_t rank = 0; rank < batches.world_size(); ++rank) {
      const uint64_t begin = batches.BatchBegin(step, rank);
      const uint64_t end = batches.BatchEnd(step, rank);
      if (end - begin < 2) continue;
      uint64_t sum = 0;
      uint64_t longest = 0;
      for (uint64_t i = begin; i < end; ++i) {
        const uint32_t cost = costs[batches.positions()[i] % costs.size()];
        sum += cost;
        longest = std::max<uint64_t>(longest, cost);
      }
      largest = std::max(largest, policy.CostOf(end - begin, sum, longest));
    }
  }
  return largest;
}

// A token budget is a hard cap (T from the device's memory): no micro-batch
// of two or more samples costs more, also where most samples take more
// than half of it and the window's count leaves no room to spare (40
// samples of 60, T = 100, W = 4 made a micro-batch of 120 when cut to 4
// micro-batches from 5 samples), under both cost models.
TEST(WindowBatchesTest, ATokenBudgetIsAHardCap) {
  for (BatchCostModel model : {BatchCostModel::kPadded, BatchCostModel::kSum}) {
    BatchPolicy policy = Tokens(100);
    policy.cost_model = model;
    const std::vector<uint32_t> sixties(40, 60);
    const WindowBatches alone =
        ArrangeWindow(Entries(sixties), 4, policy, StepOrderKey(0, 0, 0));
    EXPECT_EQ(alone.steps(), 10u);
    EXPECT_EQ(LargestSharedBatch(alone, sixties, policy), 0u);
    // Random windows of costs around T / 2, some above T.
    std::mt19937_64 random(7);
    for (int trial = 0; trial < 300; ++trial) {
      const uint32_t world = 1 + random() % 9;
      std::vector<uint32_t> costs(world * (1 + random() % 12));
      for (uint32_t& cost : costs) cost = 20 + random() % 110;
      const WindowBatches batches = ArrangeWindow(Entries(costs), world, policy,
                                                  StepOrderKey(trial, 0, 0));
      ASSERT_EQ(batches.samples(), costs.size());
      EXPECT_LE(LargestSharedBatch(batches, costs, policy), 100u)
          << "trial " << trial << " W " << world << " samples " << costs.size();
    }
  }
}

// Packed sequences: 16 samples of 3,000 and 32 of 500 with T = 4,096 and
// W = 2. First-fit-decreasing gives each long sample two short ones
// (4,000 tokens); a consecutive cut left each long one alone (3,000) and
// made 20 micro-batches of the 48 samples, 10 steps.
TEST(WindowBatchesTest, PackedSequencesFillALongSamplesGapWithShortOnes) {
  std::vector<uint32_t> costs;
  for (int i = 0; i < 16; ++i) costs.insert(costs.end(), {3000, 500, 500});
  BatchPolicy policy = Tokens(4096);
  policy.cost_model = BatchCostModel::kSum;
  const WindowBatches batches =
      ArrangeWindow(Entries(costs), 2, policy, StepOrderKey(0, 0, 0));
  // 12 packed micro-batches, and the final run (the last 4, 12 samples)
  // cut again into 6: 18 micro-batches, 9 steps.
  EXPECT_EQ(batches.steps(), 9u);
  uint64_t packed = 0;
  for (uint64_t step = 0; step < batches.steps(); ++step) {
    for (uint32_t rank = 0; rank < 2; ++rank) {
      EXPECT_LE(batches.BatchCost(step, rank), 4096u);
      packed += batches.BatchCost(step, rank) == 4000;
    }
  }
  EXPECT_EQ(packed, 12u);
}

// Two budgets: T caps every micro-batch's tokens, and the steps are
// balanced by L + L^2 / d. On lognormal lengths balancing by tokens leaves
// a step of a few long sequences next to one of many short ones, far apart
// in time; balancing by time makes the steps' time costs even.
TEST(WindowBatchesTest, TwoBudgetsCapTokensAndBalanceTime) {
  const std::vector<uint32_t> costs = LognormalCosts(20000, 6.0, 1.0, 5);
  std::vector<uint32_t> capped;
  for (uint32_t cost : costs) capped.push_back(std::min(cost, 4096u));
  BatchPolicy by_tokens = Tokens(4096);
  by_tokens.cost_model = BatchCostModel::kSum;
  BatchPolicy by_time = by_tokens;
  by_time.attention_length = 256;
  const auto worst_time_imbalance = [&](const BatchPolicy& policy) {
    const WindowBatches batches =
        ArrangeWindow(Entries(capped), 8, policy, StepOrderKey(0, 0, 0));
    double worst = 0;
    for (uint64_t step = 0; step < batches.steps(); ++step) {
      double most = 0;
      double total = 0;
      for (uint32_t rank = 0; rank < 8; ++rank) {
        double time = 0;
        uint64_t tokens = 0;
        for (uint64_t i = batches.BatchBegin(step, rank);
             i < batches.BatchEnd(step, rank); ++i) {
          const uint64_t length = capped[batches.positions()[i]];
          tokens += length;
          time += static_cast<double>(by_time.TimeOf(length));
        }
        EXPECT_TRUE(tokens <= 4096 || batches.BatchEnd(step, rank) -
                                              batches.BatchBegin(step, rank) ==
                                          1);
        most = std::max(most, time);
        total += time;
      }
      worst = std::max(worst, most * 8 / total);
    }
    return worst;
  };
  const double tokens_worst = worst_time_imbalance(by_tokens);
  const double time_worst = worst_time_imbalance(by_time);
  EXPECT_GT(tokens_worst, 1.5);
  EXPECT_LT(time_worst, 1.2) << "by tokens: " << tokens_worst;
}

// Through the epoch's windows: 37 samples of 60 with T = 100 at W = 4 are
// padded to 40 (3 repeats) or dropped to 36, each a micro-batch alone.
TEST(EpochBatchesTest,
     ALastWindowOfSamplesThatFillTheBudgetAloneMakesWholeSteps) {
  const std::vector<uint32_t> costs(37, 60);
  const auto costs_of = [&](absl::Span<const uint64_t> positions,
                            absl::Span<uint32_t> out) {
    for (size_t i = 0; i < positions.size(); ++i) {
      out[i] = costs[positions[i] % costs.size()];
    }
  };
  for (Tail tail : {Tail::kPad, Tail::kDrop}) {
    const EpochBatches epoch(37, 4, tail, Tokens(100));
    EXPECT_EQ(epoch.total(), tail == Tail::kPad ? 40u : 36u);
    const WindowBatches window = epoch.Arrange(0, costs_of, 1, 0);
    EXPECT_EQ(window.steps(), tail == Tail::kPad ? 10u : 9u);
    EXPECT_EQ(LargestSharedBatch(window, costs, Tokens(100)), 0u);
  }
}

TEST(WindowBatchesTest, StepOrderDependsOnTheKeyOnly) {
  std::vector<uint32_t> costs(5000);
  for (uint32_t i = 0; i < costs.size(); ++i) costs[i] = 16 + (i * 31) % 500;
  const auto arrange = [&](uint64_t key) {
    return ArrangeWindow(Entries(costs), 4, Tokens(2048), key).positions();
  };
  EXPECT_EQ(arrange(StepOrderKey(3, 1, 0)), arrange(StepOrderKey(3, 1, 0)));
  EXPECT_NE(arrange(StepOrderKey(3, 1, 0)), arrange(StepOrderKey(3, 2, 0)));
  EXPECT_NE(StepOrderKey(3, 1, 0), StepOrderKey(3, 1, 1));
}

TEST(WindowBatchesTest, FixedCountMakesFullBatchesOnWholeWindows) {
  BatchPolicy policy;
  policy.batch_size = 4;
  std::vector<uint32_t> costs(96);
  for (uint32_t i = 0; i < costs.size(); ++i) costs[i] = 1 + i % 13;
  const WindowBatches batches =
      ArrangeWindow(Entries(costs), 3, policy, StepOrderKey(0, 0, 0));
  EXPECT_EQ(batches.steps(), 8u);
  for (uint64_t step = 0; step < batches.steps(); ++step) {
    for (uint32_t rank = 0; rank < 3; ++rank) {
      EXPECT_EQ(batches.BatchEnd(step, rank) - batches.BatchBegin(step, rank),
                4u);
    }
  }
}

TEST(WindowBatchesTest, WindowSizes) {
  BatchPolicy tokens = Tokens(100);
  EXPECT_EQ(tokens.WindowSamples(8), kDefaultBatchWindow);
  EXPECT_EQ(tokens.WindowSamples(6), 65538u);  // a multiple of W
  EXPECT_EQ(tokens.WindowSamples(100000), 1600000u);
  tokens.window = 10;
  EXPECT_EQ(tokens.WindowSamples(2), 32u);
  BatchPolicy size;
  size.batch_size = 3;
  size.window = 100;
  EXPECT_EQ(size.WindowSamples(7), 126u);  // 16 x 7 = 112 -> 6 steps of 21
}

// With a token budget and the costs' sum, the default window holds 256
// steps at the costs' mean, within 65,536 .. 2^22 samples.
TEST(WindowBatchesTest, TheDefaultWindowHoldsTwoHundredFiftySixMeanSteps) {
  BatchPolicy policy = Tokens(16384);
  policy.costs_count = 862573;
  policy.costs_total = 120 * policy.costs_count;  // a mean of 120 tokens
  // ceil(256 x 64 x 16,384 / 120) = 2,236,963, rounded up to W.
  EXPECT_EQ(policy.WindowSamples(64), 2236992u);
  policy.costs_total = 1000 * policy.costs_count;  // 268,436 samples
  EXPECT_EQ(policy.WindowSamples(64), 268480u);
  policy.costs_total = 16000 * policy.costs_count;  // 16,778: at least 65,536
  EXPECT_EQ(policy.WindowSamples(64), kDefaultBatchWindow);
  policy.costs_total = policy.costs_count;  // a mean of 1: at most 2^22
  EXPECT_EQ(policy.WindowSamples(64), kMaxDefaultBatchWindow);
  policy.window = 1000;  // a window given is the window
  EXPECT_EQ(policy.WindowSamples(64), 1024u);
  policy.window = 0;
  policy.costs_total = 0;  // no sum (a job created without it)
  EXPECT_EQ(policy.WindowSamples(64), kDefaultBatchWindow);
}

TEST(EpochBatchesTest, TailsOfAShortLastWindow) {
  BatchPolicy policy = Tokens(100);
  policy.window = 64;  // W = 4: windows of 64
  const EpochBatches pad(130, 4, Tail::kPad, policy);
  EXPECT_EQ(pad.windows(), 3u);
  EXPECT_EQ(pad.total(), 132u);  // the last window of 2 padded to 4
  const EpochBatches drop(130, 4, Tail::kDrop, policy);
  EXPECT_EQ(drop.windows(), 2u);
  EXPECT_EQ(drop.total(), 128u);
  // A last window of 7 is made a multiple of W: 8, or 4.
  EXPECT_EQ(EpochBatches(135, 4, Tail::kPad, policy).total(), 136u);
  EXPECT_EQ(EpochBatches(135, 4, Tail::kDrop, policy).total(), 132u);
  const EpochBatches whole(128, 4, Tail::kPad, policy);
  EXPECT_EQ(whole.windows(), 2u);
  EXPECT_EQ(whole.WindowEnd(1), 128u);
  EXPECT_EQ(whole.WindowOf(127), 1u);
}

}  // namespace
}  // namespace shard::plan
