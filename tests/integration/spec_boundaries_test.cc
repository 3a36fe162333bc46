// Boundary values in every JobSpec field: each spec is either refused at
// CreateJob with INVALID_ARGUMENT / FAILED_PRECONDITION, or its epochs are
// permutations (every rank's indices in range and, together, each index
// once), and the server keeps serving. A spec that crashed the coordinator
// (a block-shuffle span wrapping past 2^64 divided by zero) ends this test
// process, which holds the server.
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/support/test_cluster.h"

namespace shard {
namespace {

using grpc::StatusCode;
using shard::v1::JobSpec;

constexpr uint64_t kBoundaries64[] = {0,
                                      1,
                                      2,
                                      (uint64_t{1} << 32) - 1,
                                      uint64_t{1} << 32,
                                      (uint64_t{1} << 32) + 1,
                                      uint64_t{1} << 62,
                                      (uint64_t{1} << 62) + 1,
                                      uint64_t{1} << 63,
                                      UINT64_MAX};
constexpr uint32_t kBoundaries32[] = {0,     1,     2,        3,
                                      65536, 65537, 1u << 31, UINT32_MAX};

// Checks entries of one epoch exhaustively up to this many per rank.
constexpr uint64_t kFullCheckEntries = 4096;

class SpecBoundariesTest : public ::testing::Test {
 protected:
  void SetUp() override { stub_ = cluster_.NewStub(); }

  // Creates a job with `spec`; on success checks epochs 0 and 1.
  void Probe(const JobSpec& spec, const std::string& what) {
    SCOPED_TRACE(what);
    const std::string job_id = absl::StrCat("j", next_job_++);
    shard::v1::CreateJobRequest request;
    request.set_job_id(job_id);
    *request.mutable_spec() = spec;
    shard::v1::Job job;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    const grpc::Status created = stub_->CreateJob(&context, request, &job);
    if (!created.ok()) {
      EXPECT_TRUE(created.error_code() == StatusCode::INVALID_ARGUMENT ||
                  created.error_code() == StatusCode::FAILED_PRECONDITION)
          << created.error_code() << " " << created.error_message();
      ++refused_;
    } else {
      ++accepted_;
      for (uint64_t epoch : {0, 1}) ExpectPermutation(job, job_id, epoch);
      Delete(job_id);
    }
    ExpectServing();
  }

  // Every rank's entries are < N and repeat only as padding does (at most
  // W-1 repeats, with TAIL_POLICY_PAD); when every rank's whole shard was
  // read, the union is exactly 0..N-1 (a subset for TAIL_POLICY_DROP).
  void ExpectPermutation(const shard::v1::Job& job, const std::string& job_id,
                         uint64_t epoch) {
    const JobSpec& spec = job.spec();
    const uint64_t n = spec.dataset_size();
    const uint32_t world = spec.world_size();
    const uint32_t ranks = std::min<uint32_t>(world, 8);
    std::set<uint64_t> seen;
    uint64_t entries = 0;
    bool complete = ranks == world;
    for (uint32_t rank = 0; rank < ranks; ++rank) {
      shard::v1::PreviewShardRequest request;
      request.set_job_id(job_id);
      request.set_rank(rank);
      request.set_epoch(epoch);
      request.set_limit(kFullCheckEntries);
      shard::v1::PreviewShardResponse response;
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
      const grpc::Status got =
          stub_->PreviewShard(&context, request, &response);
      ASSERT_TRUE(got.ok()) << got.error_message();
      complete &= response.rank_shard_size() <= kFullCheckEntries;
      for (uint64_t index : response.indices()) {
        ASSERT_LT(index, n) << "rank " << rank << " epoch " << epoch;
        seen.insert(index);
      }
      entries += response.indices_size();
    }
    const uint64_t repeats = entries - seen.size();
    EXPECT_LE(repeats, spec.tail() == v1::TAIL_POLICY_PAD ? world - 1 : 0)
        << "epoch " << epoch;
    if (complete && spec.tail() != v1::TAIL_POLICY_DROP) {
      EXPECT_EQ(seen.size(), n) << "epoch " << epoch << " is not 0..N-1";
    }
  }

  void Delete(const std::string& job_id) {
    shard::v1::DeleteJobRequest request;
    request.set_job_id(job_id);
    shard::v1::DeleteJobResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->DeleteJob(&context, request, &response).ok());
  }

  void ExpectServing() {
    shard::v1::ListJobsResponse jobs;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    ASSERT_TRUE(stub_->ListJobs(&context, {}, &jobs).ok());
  }

  static JobSpec TorchBase() {
    JobSpec spec;
    spec.set_dataset_size(37);
    spec.set_world_size(3);
    spec.set_seed(5);
    return spec;
  }

  static JobSpec BlockBase() {
    JobSpec spec = TorchBase();
    spec.set_shuffle_algorithm(v1::SHUFFLE_ALGORITHM_BLOCK);
    spec.set_block_size(4);
    spec.set_window_blocks(2);
    return spec;
  }

  testing::TestCluster cluster_;
  std::unique_ptr<shard::v1::Coordinator::Stub> stub_;
  int next_job_ = 0;
  int accepted_ = 0;
  int refused_ = 0;
};

TEST_F(SpecBoundariesTest, EveryFieldAtItsBoundaries) {
  using Setter64 = std::function<void(JobSpec&, uint64_t)>;
  using Setter32 = std::function<void(JobSpec&, uint32_t)>;
  const std::vector<std::pair<std::string, Setter64>> fields64 = {
      {"dataset_size", [](JobSpec& s, uint64_t v) { s.set_dataset_size(v); }},
      {"seed", [](JobSpec& s, uint64_t v) { s.set_seed(v); }},
      {"block_size", [](JobSpec& s, uint64_t v) { s.set_block_size(v); }},
  };
  const std::vector<std::pair<std::string, Setter32>> fields32 = {
      {"world_size", [](JobSpec& s, uint32_t v) { s.set_world_size(v); }},
      {"min_world_size",
       [](JobSpec& s, uint32_t v) { s.set_min_world_size(v); }},
      {"max_world_size",
       [](JobSpec& s, uint32_t v) { s.set_max_world_size(v); }},
      {"window_blocks", [](JobSpec& s, uint32_t v) { s.set_window_blocks(v); }},
      {"tail",
       [](JobSpec& s, uint32_t v) {
         s.set_tail(static_cast<v1::TailPolicy>(static_cast<int32_t>(v)));
       }},
      {"shuffle_algorithm",
       [](JobSpec& s, uint32_t v) {
         s.set_shuffle_algorithm(
             static_cast<v1::ShuffleAlgorithm>(static_cast<int32_t>(v)));
       }},
      {"torch_randperm",
       [](JobSpec& s, uint32_t v) {
         s.set_torch_randperm(
             static_cast<v1::TorchRandperm>(static_cast<int32_t>(v)));
       }},
  };
  for (const JobSpec& base : {TorchBase(), BlockBase()}) {
    const std::string algorithm =
        base.shuffle_algorithm() == v1::SHUFFLE_ALGORITHM_BLOCK ? "block"
                                                                : "torch";
    for (bool shuffle : {true, false}) {
      // Every field of `fields` at every value of `boundaries`.
      auto probe_all = [&](const auto& fields, const auto& boundaries) {
        for (const auto& [name, set] : fields) {
          for (auto value : boundaries) {
            JobSpec spec = base;
            spec.set_shuffle(shuffle);
            set(spec, value);
            Probe(spec, absl::StrCat(algorithm, " shuffle=", shuffle, " ", name,
                                     "=", value));
          }
        }
      };
      probe_all(fields64, kBoundaries64);
      probe_all(fields32, kBoundaries32);
    }
  }
  // The block span is a product: every pair of boundaries.
  for (uint64_t block_size : kBoundaries64) {
    for (uint32_t window_blocks : kBoundaries32) {
      JobSpec spec = BlockBase();
      spec.set_block_size(block_size);
      spec.set_window_blocks(window_blocks);
      Probe(spec, absl::StrCat("block_size=", block_size,
                               " window_blocks=", window_blocks));
    }
  }
  // Both outcomes occurred: the probe is not trivially one-sided.
  EXPECT_GT(accepted_, 50);
  EXPECT_GT(refused_, 50);
}

TEST_F(SpecBoundariesTest, WrappingBlockSpanIsRefusedNamingBothFields) {
  for (const auto& [block_size, window_blocks] :
       std::vector<std::pair<uint64_t, uint32_t>>{
           {uint64_t{1} << 63, 2}, {(uint64_t{1} << 62) + 1, 4}}) {
    JobSpec spec = BlockBase();
    spec.set_block_size(block_size);
    spec.set_window_blocks(window_blocks);
    shard::v1::CreateJobRequest request;
    request.set_job_id("wraps");
    *request.mutable_spec() = spec;
    shard::v1::Job job;
    grpc::ClientContext context;
    const grpc::Status created = stub_->CreateJob(&context, request, &job);
    EXPECT_EQ(created.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(created.error_message().find("block_size"), std::string::npos)
        << created.error_message();
    EXPECT_NE(created.error_message().find("window_blocks"), std::string::npos)
        << created.error_message();
  }
  // A block larger than the dataset is fine.
  JobSpec spec = BlockBase();
  spec.set_block_size(uint64_t{1} << 40);
  spec.set_window_blocks(4096);
  Probe(spec, "block larger than the dataset");
  EXPECT_EQ(accepted_, 1);
}

}  // namespace
}  // namespace shard
