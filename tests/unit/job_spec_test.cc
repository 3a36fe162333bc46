#include "common/plan/spec/job_spec.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace shard::plan {
namespace {

using shard::v1::JobSpec;

constexpr uint64_t kNoLimit = UINT64_MAX;

JobSpec Spec(uint64_t n, uint32_t w) {
  JobSpec spec;
  spec.set_dataset_size(n);
  spec.set_world_size(w);
  return spec;
}

TEST(JobSpecTest, FillsDistributedSamplerDefaults) {
  absl::StatusOr<JobSpec> spec = NormalizeJobSpec(Spec(10, 2), kNoLimit);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_TRUE(spec->shuffle());
  EXPECT_EQ(spec->seed(), 0u);
  EXPECT_EQ(spec->tail(), shard::v1::TAIL_POLICY_PAD);
  EXPECT_EQ(spec->shuffle_algorithm(), shard::v1::SHUFFLE_ALGORITHM_TORCH);
  EXPECT_EQ(spec->torch_randperm(), shard::v1::TORCH_RANDPERM_2_6);
}

TEST(JobSpecTest, KeepsAnExplicitShuffleOff) {
  JobSpec in = Spec(10, 2);
  in.set_shuffle(false);
  EXPECT_FALSE(NormalizeJobSpec(in, kNoLimit)->shuffle());
}

TEST(JobSpecTest, RefusesBadFieldsWithMessages) {
  auto expect_invalid = [](const JobSpec& spec, const std::string& needle) {
    absl::StatusOr<JobSpec> result = NormalizeJobSpec(spec, kNoLimit);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(result.status().message().find(needle), std::string::npos)
        << result.status();
  };
  expect_invalid(Spec(0, 2), "dataset_size");
  expect_invalid(Spec(10, 0), "world_size");
  expect_invalid(Spec(10, kMaxWorldSize + 1), "world_size");
  JobSpec seed = Spec(10, 2);
  seed.set_seed(uint64_t{1} << 63);
  expect_invalid(seed, "seed");
  JobSpec tail = Spec(10, 2);
  tail.set_tail(static_cast<shard::v1::TailPolicy>(42));
  expect_invalid(tail, "tail");
}

// A mixture with balanced batches: its costs are one per sample of the
// sources together, at most 2^32 of them (the epoch, here twice as long,
// may hold more positions).
TEST(JobSpecTest, AMixtureWithBatchesHoldsAtMost2To32Samples) {
  const auto mixture = [](uint64_t second_source) {
    JobSpec spec = Spec(0, 8);
    spec.set_shuffle_algorithm(shard::v1::SHUFFLE_ALGORITHM_FEISTEL);
    shard::v1::Source* a = spec.add_sources();
    a->set_name("a");
    a->set_size(uint64_t{1} << 31);
    a->set_repeat(2);
    shard::v1::Source* b = spec.add_sources();
    b->set_name("b");
    b->set_size(second_source);
    b->set_repeat(2);
    spec.mutable_batches()->set_batch_tokens(4096);
    spec.mutable_batches()->set_costs_sha256(std::string(64, 'a'));
    return NormalizeJobSpec(spec, kNoLimit);
  };
  absl::StatusOr<JobSpec> largest = mixture(uint64_t{1} << 31);
  ASSERT_TRUE(largest.ok()) << largest.status();
  EXPECT_EQ(largest->dataset_size(), uint64_t{1} << 32);
  EXPECT_EQ(largest->epoch_size(), uint64_t{1} << 33);
  EXPECT_EQ(mixture((uint64_t{1} << 31) + 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Two budgets: an attention length balances packed sequences (sum) by
// time under a token budget, 1..2^32.
TEST(JobSpecTest, AnAttentionLengthNeedsATokenBudgetOfPackedSequences) {
  const auto with = [](uint64_t attention_length, bool sum, bool tokens) {
    JobSpec spec = Spec(100, 2);
    shard::v1::BatchPolicy& batches = *spec.mutable_batches();
    if (tokens) {
      batches.set_batch_tokens(4096);
    } else {
      batches.set_batch_size(8);
    }
    batches.set_cost_model(sum ? shard::v1::BATCH_COST_MODEL_SUM
                               : shard::v1::BATCH_COST_MODEL_PADDED);
    batches.set_attention_length(attention_length);
    batches.set_costs_sha256(std::string(64, 'a'));
    return NormalizeJobSpec(spec, kNoLimit).status();
  };
  EXPECT_TRUE(with(2048, true, true).ok());
  EXPECT_TRUE(with(kMaxAttentionLength, true, true).ok());
  EXPECT_EQ(with(kMaxAttentionLength + 1, true, true).code(),
            absl::StatusCode::kInvalidArgument);
  const absl::Status padded = with(2048, false, true);
  EXPECT_EQ(padded.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(padded.message().find("sum cost model"), std::string::npos)
      << padded;
  EXPECT_EQ(with(2048, true, false).code(), absl::StatusCode::kInvalidArgument);
}

TEST(JobSpecTest, AcceptsTheLargestSeed) {
  JobSpec spec = Spec(10, 2);
  spec.set_seed(kMaxSeed);
  EXPECT_TRUE(NormalizeJobSpec(spec, kNoLimit).ok());
}

TEST(JobSpecTest, RefusesOrdersAboveTheMemoryLimit) {
  absl::StatusOr<JobSpec> result = NormalizeJobSpec(Spec(1000, 2), 3999);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  // The identity order needs no memory.
  JobSpec plain = Spec(1000, 2);
  plain.set_shuffle(false);
  EXPECT_TRUE(NormalizeJobSpec(plain, 0).ok());
}

TEST(JobSpecTest, EpochOrderBytesUsesNarrowEntriesBelow2To32) {
  JobSpec spec = *NormalizeJobSpec(Spec(1000, 2), kNoLimit);
  EXPECT_EQ(EpochOrderBytes(spec), 4000u);
  spec.set_dataset_size((uint64_t{1} << 32) + 1);
  EXPECT_EQ(EpochOrderBytes(spec), 8 * ((uint64_t{1} << 32) + 1));
}

TEST(JobSpecTest, ValidatesIds) {
  EXPECT_TRUE(ValidateJobId("train-resnet_50.v2").ok());
  EXPECT_FALSE(ValidateJobId("").ok());
  EXPECT_FALSE(ValidateJobId("has space").ok());
  EXPECT_FALSE(ValidateJobId(std::string(129, 'a')).ok());
  EXPECT_TRUE(ValidateMemberId("pod-0/local-rank-1").ok());
  EXPECT_FALSE(ValidateMemberId("tab\there").ok());
  EXPECT_FALSE(ValidateMemberId("").ok());
}

TEST(JobSpecTest, ValidatesEpochs) {
  EXPECT_TRUE(ValidateEpoch(kMaxEpoch).ok());
  EXPECT_FALSE(ValidateEpoch(kMaxEpoch + 1).ok());
}

// Differences the one-line form leaves out are named field by field.
TEST(JobSpecTest, DifferenceNamesEveryField) {
  const JobSpec base = *NormalizeJobSpec(Spec(50, 2), kNoLimit);
  EXPECT_EQ(JobSpecDifference(base, base), "");
  JobSpec keyed = base;
  keyed.set_shuffle_algorithm(shard::v1::SHUFFLE_ALGORITHM_FEISTEL);
  EXPECT_EQ(DescribeJobSpec(keyed), DescribeJobSpec(base));
  EXPECT_EQ(JobSpecDifference(base, keyed),
            "modified: shuffle_algorithm: SHUFFLE_ALGORITHM_TORCH -> "
            "SHUFFLE_ALGORITHM_FEISTEL");
  JobSpec elastic = base;
  elastic.set_max_world_size(4);
  EXPECT_EQ(JobSpecDifference(base, elastic),
            "modified: max_world_size: 2 -> 4");
}

JobSpec Mixture(std::vector<shard::v1::Source> sources) {
  JobSpec spec;
  spec.set_world_size(2);
  for (shard::v1::Source& source : sources) {
    *spec.add_sources() = std::move(source);
  }
  return *NormalizeJobSpec(spec, kNoLimit);
}

shard::v1::Source SourceOf(const std::string& name, uint64_t size) {
  shard::v1::Source source;
  source.set_name(name);
  source.set_size(size);
  return source;
}

TEST(JobSpecTest, DifferenceNamesASourceAndTakesRepeatOneAsNoShare) {
  shard::v1::Source once = SourceOf("a", 10);
  once.set_repeat(1.0);
  shard::v1::Source twice = SourceOf("a", 10);
  twice.set_repeat(2.0);
  const JobSpec plain = Mixture({SourceOf("a", 10), SourceOf("b", 5)});
  EXPECT_EQ(JobSpecDifference(plain, Mixture({once, SourceOf("b", 5)})), "");
  const std::string difference =
      JobSpecDifference(plain, Mixture({twice, SourceOf("b", 5)}));
  EXPECT_NE(difference.find("sources[0].repeat"), std::string::npos)
      << difference;
  EXPECT_NE(
      JobSpecDifference(plain, Mixture({SourceOf("a", 10), SourceOf("c", 5)}))
          .find("sources[1].name: \"b\" -> \"c\""),
      std::string::npos);
}

TEST(JobSpecTest, EpochOrderUsesSeedPlusEpoch) {
  JobSpec spec = *NormalizeJobSpec(Spec(50, 2), kNoLimit);
  spec.set_seed(10);
  const EpochOrder a = BuildEpochOrder(spec, 5);
  spec.set_seed(15);
  const EpochOrder b = BuildEpochOrder(spec, 0);
  for (uint64_t i = 0; i < 50; ++i) EXPECT_EQ(a.At(i), b.At(i));
}

}  // namespace
}  // namespace shard::plan
