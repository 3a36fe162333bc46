// Mixtures: exact per-source counts (largest remainder), the walk of each
// source's passes across epochs, the checks of a spec's sources, and a
// one-source mixture that is the plain job bit for bit.
#include "common/plan/mixtures/mixture.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "common/plan/spec/job_spec.h"
#include "gtest/gtest.h"

namespace shard::plan {
namespace {

using shard::v1::JobSpec;

shard::v1::Source* AddSource(JobSpec& spec, const std::string& name,
                             uint64_t size) {
  shard::v1::Source* source = spec.add_sources();
  source->set_name(name);
  source->set_size(size);
  return source;
}

JobSpec Mixture() {
  JobSpec spec;
  spec.set_world_size(3);
  spec.set_seed(42);
  return spec;
}

JobSpec Normalized(const JobSpec& spec) {
  absl::StatusOr<JobSpec> normal = NormalizeJobSpec(spec, UINT64_MAX);
  EXPECT_TRUE(normal.ok()) << normal.status();
  return normal.ok() ? *normal : spec;
}

// The epoch's chosen samples, in source order.
std::vector<uint64_t> ChosenList(const JobSpec& spec, uint64_t epoch) {
  const MixtureEpoch mixture(spec, epoch);
  std::vector<uint64_t> chosen(mixture.size());
  for (uint64_t j = 0; j < chosen.size(); ++j) chosen[j] = mixture.Chosen(j);
  return chosen;
}

TEST(MixtureTest, WeightsAreApportionedByLargestRemainder) {
  JobSpec spec = Mixture();
  AddSource(spec, "a", 500)->set_weight(0.3);
  AddSource(spec, "b", 500)->set_weight(0.45);
  AddSource(spec, "c", 5000)->set_weight(1.7);
  spec.set_epoch_size(1000);
  // Quotas 122.45, 183.67, 693.88: the two seats left go to c, then b.
  EXPECT_EQ(SourceCounts(Normalized(spec)),
            (std::vector<uint64_t>{122, 184, 694}));
}

TEST(MixtureTest, RepeatAndChooseMakeTheEpochSizeRoundedHalfUp) {
  JobSpec spec = Mixture();
  AddSource(spec, "quarter", 10)->set_repeat(0.25);  // 2.5
  AddSource(spec, "more", 7)->set_repeat(1.5);       // 10.5
  AddSource(spec, "three", 100)->set_choose(3);
  AddSource(spec, "whole", 4);  // repeat 1: 4
  const JobSpec normal = Normalized(spec);
  EXPECT_EQ(normal.epoch_size(), 20u);  // 20 exactly.
  EXPECT_EQ(normal.dataset_size(), 121u);
  // One seat left for two remainders of 0.5: the first source takes it.
  EXPECT_EQ(SourceCounts(normal), (std::vector<uint64_t>{3, 10, 3, 4}));
  // Without weights an epoch size may restate that figure (as the stored
  // spec does), never another (docs/mixtures.md, the job's own rules).
  spec.set_epoch_size(20);
  EXPECT_EQ(Normalized(spec).DebugString(), normal.DebugString());
}

TEST(MixtureTest, EveryEpochTakesExactlyItsCountFromEachSource) {
  JobSpec spec = Mixture();
  AddSource(spec, "a", 997)->set_weight(1.0);
  AddSource(spec, "b", 31)->set_weight(2.5);
  AddSource(spec, "c", 1)->set_weight(0.125);
  spec.set_epoch_size(1009);
  const JobSpec normal = Normalized(spec);
  const std::vector<uint64_t> counts = SourceCounts(normal);
  const std::vector<uint64_t> starts = {0, 997, 1028, 1029};
  for (uint64_t epoch : {0, 1, 5, 1000}) {
    std::vector<uint64_t> seen(3, 0);
    for (uint64_t index : ChosenList(normal, epoch)) {
      const auto source =
          std::upper_bound(starts.begin(), starts.end(), index) -
          starts.begin() - 1;
      ASSERT_LT(source, 3);
      ++seen[source];
    }
    EXPECT_EQ(seen, counts) << "epoch " << epoch;
  }
}

// A down-sampled source serves every sample once before any twice, across
// epochs: its samples, epoch after epoch, are one permutation after
// another.
TEST(MixtureTest, ADownSampledSourceServesEverySampleOnceBeforeAnyTwice) {
  JobSpec spec = Mixture();
  AddSource(spec, "big", 1000)->set_choose(300);
  AddSource(spec, "small", 17)->set_repeat(3);
  const JobSpec normal = Normalized(spec);
  std::vector<uint64_t> walk;  // "big"'s samples over 10 epochs, in order.
  for (uint64_t epoch = 0; epoch < 10; ++epoch) {
    const std::vector<uint64_t> chosen = ChosenList(normal, epoch);
    walk.insert(walk.end(), chosen.begin(), chosen.begin() + 300);
  }
  for (size_t pass = 0; pass + 1000 <= walk.size(); pass += 1000) {
    const std::set<uint64_t> distinct(walk.begin() + pass,
                                      walk.begin() + pass + 1000);
    EXPECT_EQ(distinct.size(), 1000u) << "pass starting at " << pass;
  }
  // Passes differ (each has its own key).
  EXPECT_NE(std::vector<uint64_t>(walk.begin(), walk.begin() + 1000),
            std::vector<uint64_t>(walk.begin() + 1000, walk.begin() + 2000));
}

// Over many epochs at sizes where passes span epochs unevenly (co-prime
// sizes, a source up-sampled hundreds of times): every epoch takes exactly
// its counts, and each source's walk, cut into passes of its size, is a
// permutation per whole pass and repeats nothing within the last, partial
// one.
TEST(MixtureTest, ManyEpochsAtLargeSizesStayFair) {
  JobSpec spec = Mixture();
  AddSource(spec, "big", 1000003)->set_weight(5);
  AddSource(spec, "mid", 65537)->set_weight(1);
  AddSource(spec, "tiny", 101)->set_weight(1);
  spec.set_epoch_size(200000);
  const JobSpec normal = Normalized(spec);
  const std::vector<uint64_t> counts = SourceCounts(normal);
  const std::vector<uint64_t> ends = SourceEnds(normal);
  ASSERT_EQ(counts, (std::vector<uint64_t>{142857, 28572, 28571}));
  std::vector<std::vector<uint64_t>> walks(3);
  for (uint64_t epoch = 0; epoch < 25; ++epoch) {
    const std::vector<uint64_t> chosen = ChosenList(normal, epoch);
    ASSERT_EQ(chosen.size(), 200000u);
    auto from = chosen.begin();
    for (size_t k = 0; k < 3; ++k) {
      for (auto it = from; it != from + counts[k]; ++it) {
        ASSERT_LT(*it, ends[k]) << "epoch " << epoch << " source " << k;
        ASSERT_GE(*it, ends[k] - normal.sources(k).size());
      }
      walks[k].insert(walks[k].end(), from, from + counts[k]);
      from += counts[k];
    }
  }
  for (size_t k = 0; k < 3; ++k) {
    const uint64_t size = normal.sources(k).size();
    for (size_t pass = 0; pass < walks[k].size(); pass += size) {
      const size_t length = std::min<size_t>(size, walks[k].size() - pass);
      std::vector<uint64_t> samples(walks[k].begin() + pass,
                                    walks[k].begin() + pass + length);
      std::sort(samples.begin(), samples.end());
      ASSERT_EQ(std::adjacent_find(samples.begin(), samples.end()),
                samples.end())
          << "source " << k << " repeats within the pass at " << pass;
    }
  }
  // "big" walked 3.57 passes, "mid" 10.9, "tiny" 7,072.
  EXPECT_EQ(walks[0].size() / 1000003, 3u);
  EXPECT_EQ(walks[1].size() / 65537, 10u);
  EXPECT_EQ(walks[2].size() / 101, 7072u);
}

// An up-sampled source repeats whole passes: no sample twice within one
// pass, and a count that is a whole number of passes takes them in order.
TEST(MixtureTest, AnUpSampledSourceRepeatsWholePasses) {
  JobSpec spec = Mixture();
  AddSource(spec, "partial", 10)->set_repeat(2.5);
  AddSource(spec, "whole", 6)->set_repeat(2);
  const JobSpec normal = Normalized(spec);
  ASSERT_EQ(SourceCounts(normal), (std::vector<uint64_t>{25, 12}));
  std::vector<uint64_t> walk;
  for (uint64_t epoch = 0; epoch < 4; ++epoch) {
    const std::vector<uint64_t> chosen = ChosenList(normal, epoch);
    walk.insert(walk.end(), chosen.begin(), chosen.begin() + 25);
    EXPECT_EQ(std::vector<uint64_t>(chosen.begin() + 25, chosen.end()),
              (std::vector<uint64_t>{10, 11, 12, 13, 14, 15, 10, 11, 12, 13, 14,
                                     15}));
  }
  for (size_t pass = 0; pass < walk.size(); pass += 10) {
    EXPECT_EQ(std::set<uint64_t>(walk.begin() + pass, walk.begin() + pass + 10)
                  .size(),
              10u);
  }
}

TEST(MixtureTest, OneSourceIsThePlainJobBitForBit) {
  JobSpec plain;
  plain.set_dataset_size(1000);
  plain.set_world_size(3);
  plain.set_seed(7);
  JobSpec mixture = plain;
  mixture.set_dataset_size(0);
  AddSource(mixture, "only", 1000);
  const JobSpec plain_normal = Normalized(plain);
  const JobSpec mixture_normal = Normalized(mixture);
  for (uint64_t epoch : {0, 3}) {
    const EpochOrder a = BuildEpochOrder(plain_normal, epoch);
    const EpochOrder b = BuildEpochOrder(mixture_normal, epoch);
    ASSERT_EQ(a.size(), b.size());
    for (uint64_t i = 0; i < a.size(); ++i) ASSERT_EQ(a.At(i), b.At(i));
  }
  EXPECT_EQ(LayoutOf(mixture_normal).total(), LayoutOf(plain_normal).total());
}

TEST(MixtureTest, TheOrderShufflesTheChosenList) {
  JobSpec spec = Mixture();
  AddSource(spec, "a", 50)->set_choose(20);
  AddSource(spec, "b", 9)->set_repeat(1.5);
  const JobSpec normal = Normalized(spec);
  for (uint64_t epoch : {0, 2}) {
    std::vector<uint64_t> chosen = ChosenList(normal, epoch);
    const EpochOrder order = BuildEpochOrder(normal, epoch);
    ASSERT_EQ(order.size(), chosen.size());
    std::vector<uint64_t> ordered(order.size());
    for (uint64_t i = 0; i < order.size(); ++i) ordered[i] = order.At(i);
    std::vector<uint64_t> many(order.size());
    std::iota(many.begin(), many.end(), 0);
    order.AtMany(absl::MakeSpan(many));
    EXPECT_EQ(many, ordered);
    EXPECT_NE(ordered, chosen);
    std::sort(ordered.begin(), ordered.end());
    std::sort(chosen.begin(), chosen.end());
    EXPECT_EQ(ordered, chosen);
  }
}

// Orders that are materialised hold the epoch's positions, not the
// dataset: a torch-shuffled mixture is within the order budget by its epoch
// size (8 bytes a position above 2^32); a keyed (Feistel) one of 2^40
// positions holds nothing and reads any position at once.
TEST(MixtureTest, OrderMemoryFollowsTheEpochSize) {
  JobSpec small_epoch = Mixture();
  AddSource(small_epoch, "a", uint64_t{1} << 40)->set_choose(1000);
  AddSource(small_epoch, "b", uint64_t{1} << 40)->set_choose(24);
  absl::StatusOr<JobSpec> small = NormalizeJobSpec(small_epoch, 1 << 20);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(EpochOrderBytes(*small), 1024u * 4);

  JobSpec large_epoch = Mixture();
  AddSource(large_epoch, "a", uint64_t{1} << 39)->set_weight(1);
  AddSource(large_epoch, "b", 1000)->set_weight(1);
  large_epoch.set_epoch_size(uint64_t{1} << 33);
  absl::StatusOr<JobSpec> refused =
      NormalizeJobSpec(large_epoch, uint64_t{4} << 30);
  ASSERT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("of 8589934592 samples needs "
                                            "68719476736 bytes"),
            std::string::npos)
      << refused.status();

  large_epoch.set_epoch_size(uint64_t{1} << 40);
  large_epoch.set_shuffle_algorithm(shard::v1::SHUFFLE_ALGORITHM_FEISTEL);
  absl::StatusOr<JobSpec> keyed = NormalizeJobSpec(large_epoch, 0);
  ASSERT_TRUE(keyed.ok()) << keyed.status();
  EXPECT_EQ(EpochOrderBytes(*keyed), 0u);
  const EpochOrder order = StartEpochOrder(*keyed, 3);
  ASSERT_EQ(order.size(), uint64_t{1} << 40);
  const uint64_t end = (uint64_t{1} << 39) + 1000;
  for (uint64_t i : {uint64_t{0}, uint64_t{12345}, uint64_t{1} << 39,
                     (uint64_t{1} << 40) - 1}) {
    EXPECT_LT(order.At(i), end) << i;
  }
}

TEST(MixtureTest, NormalizingTwiceChangesNothing) {
  JobSpec spec = Mixture();
  AddSource(spec, "a", 10)->set_repeat(0.5);
  AddSource(spec, "b", 20);
  const JobSpec once = Normalized(spec);
  EXPECT_EQ(Normalized(once).DebugString(), once.DebugString());
}

// Each wrong spec is refused with INVALID_ARGUMENT naming the problem.
TEST(MixtureTest, WrongSourcesAreRefusedWithTheReason) {
  struct Case {
    std::string what;
    JobSpec spec;
    std::string message;
  };
  std::vector<Case> cases;
  auto add = [&](const std::string& what, const std::string& message) {
    cases.push_back({what, Mixture(), message});
    return &cases.back().spec;
  };
  JobSpec* spec = add("duplicate", "two sources are named \"a\"");
  AddSource(*spec, "a", 1);
  AddSource(*spec, "a", 2);
  spec = add("mixed", "either every source has a weight or none has");
  AddSource(*spec, "a", 1)->set_weight(1);
  AddSource(*spec, "b", 1)->set_repeat(1);
  spec = add("no epoch size", "need the job's epoch_size");
  AddSource(*spec, "a", 1)->set_weight(1);
  spec = add("epoch size without weights",
             "without weights, epoch_size may only restate the epoch the "
             "sources' repeat / choose make, 10");
  AddSource(*spec, "a", 10);
  spec->set_epoch_size(11);
  spec = add("block", "SHUFFLE_ALGORITHM_TORCH or _FEISTEL");
  AddSource(*spec, "a", 10);
  spec->set_shuffle_algorithm(shard::v1::SHUFFLE_ALGORITHM_BLOCK);
  spec->set_block_size(2);
  spec = add("dataset size", "dataset_size of a mixture is its sources' total");
  AddSource(*spec, "a", 10);
  spec->set_dataset_size(11);
  spec = add("nan", "weight must be in");
  AddSource(*spec, "a", 10)->set_weight(std::nan(""));
  spec->set_epoch_size(5);
  spec = add("choose 0", "choose must be in 1..");
  AddSource(*spec, "a", 10)->set_choose(0);
  spec = add("empty epoch", "the sources make epochs of 0 samples");
  AddSource(*spec, "a", 1)->set_repeat(0.25);
  spec = add("name", "name must be 1..64 characters");
  AddSource(*spec, "a b", 1);
  spec = add("size", "size must be >= 1");
  AddSource(*spec, "a", 0);
  spec = add("too many", "at most 1024 sources");
  for (int k = 0; k <= kMaxSources; ++k)
    AddSource(*spec, "s" + std::to_string(k), 1);
  spec = add("epoch size of a plain job", "only to a job with sources");
  spec->set_dataset_size(10);
  spec->set_epoch_size(10);
  for (const Case& c : cases) {
    absl::StatusOr<JobSpec> normal = NormalizeJobSpec(c.spec, UINT64_MAX);
    ASSERT_FALSE(normal.ok()) << c.what;
    EXPECT_EQ(normal.status().code(), absl::StatusCode::kInvalidArgument)
        << c.what;
    EXPECT_NE(normal.status().message().find(c.message), std::string::npos)
        << c.what << ": " << normal.status().message();
  }
}

}  // namespace
}  // namespace shard::plan
