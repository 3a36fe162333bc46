// The libtorch sampler adapter inside a real DataLoader: each finished pass
// over the loader is the next epoch while an abandoned one restarts its
// epoch, the progress handle survives the move into the loader, positions
// with DataLoader workers count what the loop reported, and ResumeAt /
// save+load continue mid-epoch; a job with balanced batches yields its
// micro-batches.
#include <algorithm>
#include <vector>

#include "common/plan/batches/cost_digest.h"
#include "gtest/gtest.h"
#include "shard/client/torch/shard_data_loader.h"
#include "shard/client/torch/shard_sampler.h"
#include "shard/client/torch/status_error.h"
#include "tests/support/spread_costs.h"
#include "tests/support/test_cluster.h"
#include "torch/torch.h"

namespace shard {
namespace {

// Returns each example's index as its data, so batches reveal the indices.
class IndexDataset : public torch::data::datasets::Dataset<IndexDataset> {
 public:
  explicit IndexDataset(size_t size) : size_(size) {}
  ExampleType get(size_t index) override {
    return {torch::tensor(static_cast<int64_t>(index)), torch::tensor(0)};
  }
  torch::optional<size_t> size() const override { return size_; }

 private:
  size_t size_;
};

class TorchSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = cluster_.NewClient();
    shard::v1::JobSpec spec;
    spec.set_dataset_size(kSize);
    spec.set_world_size(1);
    spec.set_seed(3);
    auto joined = client_->Join("job", "solo", spec, absl::Seconds(10));
    ASSERT_TRUE(joined.ok()) << joined.status();
    membership_ = *joined;
  }

  std::vector<uint64_t> Expected(uint64_t epoch) {
    auto page = client_->Preview("job", 0, epoch, 0, kSize);
    return {page->indices().begin(), page->indices().end()};
  }

  static constexpr size_t kSize = 1000;
  testing::TestCluster cluster_;
  std::shared_ptr<client::CoordinatorClient> client_;
  client::Membership membership_;
};

template <typename Loader>
std::vector<uint64_t> OnePass(Loader& loader) {
  std::vector<uint64_t> seen;
  for (auto& batch : loader) {
    for (auto& example : batch)
      seen.push_back(example.data.template item<int64_t>());
  }
  return seen;
}

TEST_F(TorchSamplerTest, EachPassOverTheLoaderIsTheNextEpoch) {
  torch_adapter::ShardSampler sampler(client_, membership_);
  auto progress = sampler.progress();
  auto loader = torch::data::make_data_loader(
      IndexDataset(kSize), std::move(sampler),
      torch::data::DataLoaderOptions().batch_size(64));
  EXPECT_EQ(OnePass(*loader), Expected(0));
  // Opening the stream and receiving indices takes time, and it is counted.
  EXPECT_GT(progress->IndexWait(), absl::ZeroDuration());
  EXPECT_EQ(progress->Current().epoch, 0u);
  EXPECT_EQ(progress->Current().position, kSize);
  EXPECT_EQ(OnePass(*loader), Expected(1));
  EXPECT_EQ(progress->Current().epoch, 1u);
  EXPECT_NE(Expected(0), Expected(1));
}

// The pattern of PyTorch's DDP tutorial: peek a batch, then the epoch's
// loop. The peek must not move to another epoch.
TEST_F(TorchSamplerTest, AnAbandonedPassRestartsTheSameEpoch) {
  torch_adapter::ShardSampler sampler(client_, membership_);
  auto progress = sampler.progress();
  auto loader = torch::data::make_data_loader(
      IndexDataset(kSize), std::move(sampler),
      torch::data::DataLoaderOptions().batch_size(64));
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    const std::vector<uint64_t> expected = Expected(epoch);
    auto peek = loader->begin();
    ASSERT_NE(peek, loader->end());
    EXPECT_EQ((*peek)[0].data.item<int64_t>(),
              static_cast<int64_t>(expected[0]));
    EXPECT_EQ(OnePass(*loader), expected) << "epoch " << epoch;
    EXPECT_EQ(progress->Current().epoch, epoch);
  }
}

TEST_F(TorchSamplerTest, AnAbandonedPassRestartsAtTheResumePoint) {
  torch_adapter::ShardSampler sampler(client_, membership_);
  sampler.progress()->ResumeAt({2, 300});
  auto loader = torch::data::make_data_loader(
      IndexDataset(kSize), std::move(sampler),
      torch::data::DataLoaderOptions().batch_size(50));
  ASSERT_NE(loader->begin(), loader->end());
  const std::vector<uint64_t> expected = Expected(2);
  EXPECT_EQ(OnePass(*loader),
            std::vector<uint64_t>(expected.begin() + 300, expected.end()));
  EXPECT_EQ(OnePass(*loader), Expected(3));
}

// DataLoader workers fetch batches ahead of the loop: a loop that reports
// what it received gets exact positions; one that does not sees the
// indices handed to the workers.
TEST_F(TorchSamplerTest, WorkersNeedTheLoopToReportConsumedSamples) {
  for (bool report : {true, false}) {
    torch_adapter::ShardSampler sampler(client_, membership_);
    auto progress = sampler.progress();
    auto loader = torch::data::make_data_loader(
        IndexDataset(kSize), std::move(sampler),
        torch::data::DataLoaderOptions().batch_size(32).workers(2));
    std::vector<uint64_t> trained;
    for (auto& batch : *loader) {
      for (auto& example : batch) {
        trained.push_back(example.data.item<int64_t>());
      }
      if (report) progress->Consumed(batch.size());
      if (trained.size() == 5 * 32) break;
    }
    if (report) {
      EXPECT_EQ(progress->Current().position, 5u * 32);
      // A resume from there trains exactly the rest of the epoch.
      torch_adapter::ShardSampler resumed(client_, membership_);
      resumed.progress()->ResumeAt(progress->Current());
      auto rest = torch::data::make_data_loader(
          IndexDataset(kSize), std::move(resumed),
          torch::data::DataLoaderOptions().batch_size(32).workers(2));
      for (uint64_t index : OnePass(*rest)) trained.push_back(index);
      EXPECT_EQ(trained, Expected(0));
    } else {
      EXPECT_GT(progress->Current().position, 5u * 32)
          << "the workers prefetched nothing: this case shows nothing";
    }
  }
}

// The plain loop every libtorch user writes, over MakeShardDataLoader: no
// Consumed() call, yet with prefetching workers the position counts
// exactly what the loop received, and a resume from it trains the rest.
TEST_F(TorchSamplerTest, TheShardDataLoaderCountsWhatThePlainLoopReceived) {
  auto loader = torch_adapter::MakeShardDataLoader(
      IndexDataset(kSize), torch_adapter::ShardSampler(client_, membership_),
      torch::data::DataLoaderOptions().batch_size(32).workers(2));
  std::vector<uint64_t> trained;
  for (auto& batch : *loader) {
    for (auto& example : batch) {
      trained.push_back(example.data.item<int64_t>());
    }
    if (trained.size() == 5 * 32) break;
  }
  EXPECT_EQ(loader->progress().Current().position, 5u * 32);
  auto rest = torch_adapter::MakeShardDataLoader(
      IndexDataset(kSize), torch_adapter::ShardSampler(client_, membership_),
      torch::data::DataLoaderOptions().batch_size(32).workers(2));
  rest->progress().ResumeAt(loader->progress().Current());
  for (uint64_t index : OnePass(*rest)) trained.push_back(index);
  EXPECT_EQ(trained, Expected(0));
  // That pass was received to its end: the next one is epoch 1.
  EXPECT_EQ(OnePass(*rest), Expected(1));
  EXPECT_EQ(rest->progress().Current().epoch, 1u);
}

// Stacked batches (one Example of tensors) count their first dimension.
TEST_F(TorchSamplerTest, TheShardDataLoaderCountsStackedBatches) {
  auto loader = torch_adapter::MakeShardDataLoader(
      IndexDataset(kSize).map(torch::data::transforms::Stack<>()),
      torch_adapter::ShardSampler(client_, membership_),
      torch::data::DataLoaderOptions().batch_size(64).workers(2));
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    std::vector<uint64_t> seen;
    for (auto& batch : *loader) {
      for (int64_t i = 0; i < batch.data.size(0); ++i) {
        seen.push_back(batch.data[i].item<int64_t>());
      }
      EXPECT_EQ(loader->progress().Current().position, seen.size());
    }
    EXPECT_EQ(seen, Expected(epoch));
  }
}

// A peek and a `break` with workers: libtorch refuses a new pass while the
// workers have batches in flight; the loader drops them, and the next pass
// is the same epoch from its start.
TEST_F(TorchSamplerTest, TheShardDataLoaderWithWorkersForgetsALeftPass) {
  auto loader = torch_adapter::MakeShardDataLoader(
      IndexDataset(kSize), torch_adapter::ShardSampler(client_, membership_),
      torch::data::DataLoaderOptions().batch_size(16).workers(2));
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    auto peek = loader->begin();
    ASSERT_NE(peek, loader->end());
    EXPECT_EQ((*peek)[0].data.item<int64_t>(),
              static_cast<int64_t>(Expected(epoch)[0]));
    int batches = 0;
    for (auto& batch : *loader) {
      EXPECT_FALSE(batch.empty());
      if (++batches == 3) break;
    }
    EXPECT_EQ(OnePass(*loader), Expected(epoch)) << "epoch " << epoch;
    EXPECT_EQ(loader->progress().Current().epoch, epoch);
    EXPECT_EQ(loader->progress().Current().position, kSize);
  }
}

TEST_F(TorchSamplerTest, TheShardDataLoaderRefusesUnorderedBatches) {
  EXPECT_THROW(
      torch_adapter::MakeShardDataLoader(
          IndexDataset(kSize),
          torch_adapter::ShardSampler(client_, membership_),
          torch::data::DataLoaderOptions().workers(2).enforce_ordering(false)),
      std::invalid_argument);
}

TEST_F(TorchSamplerTest, TheShardDataLoaderRefusesDropLast) {
  EXPECT_THROW(torch_adapter::MakeShardDataLoader(
                   IndexDataset(kSize),
                   torch_adapter::ShardSampler(client_, membership_),
                   torch::data::DataLoaderOptions().drop_last(true)),
               std::invalid_argument);
}

// A coordinator error reaches the trainer with its code (the torch
// boundary throws StatusError), so a deleted job is not mistaken for churn.
TEST_F(TorchSamplerTest, CoordinatorErrorsKeepTheirCode) {
  torch_adapter::ShardSampler sampler(client_, membership_);
  ASSERT_TRUE(client_->DeleteJob("job", /*force=*/true).ok());
  try {
    sampler.reset();
    sampler.next(10);
    FAIL() << "no error for a deleted job";
  } catch (const torch_adapter::StatusError& error) {
    EXPECT_TRUE(absl::IsNotFound(error.status())) << error.what();
    const std::exception& plain = error;
    ASSERT_TRUE(torch_adapter::StatusOf(plain).has_value());
    EXPECT_TRUE(absl::IsNotFound(*torch_adapter::StatusOf(plain)));
  }
  EXPECT_FALSE(torch_adapter::StatusOf(std::runtime_error("gloo")));
}

TEST_F(TorchSamplerTest, ResumeAtContinuesMidEpoch) {
  torch_adapter::ShardSampler sampler(client_, membership_);
  sampler.progress()->ResumeAt({2, 300});
  auto loader = torch::data::make_data_loader(
      IndexDataset(kSize), std::move(sampler),
      torch::data::DataLoaderOptions().batch_size(50));
  const std::vector<uint64_t> expected = Expected(2);
  EXPECT_EQ(OnePass(*loader),
            std::vector<uint64_t>(expected.begin() + 300, expected.end()));
}

TEST_F(TorchSamplerTest, SaveAndLoadCarryTheProgress) {
  torch_adapter::ShardSampler first(client_, membership_);
  first.reset();
  ASSERT_TRUE(first.next(100).has_value());
  torch::serialize::OutputArchive out;
  first.save(out);
  std::ostringstream bytes;
  out.save_to(bytes);

  torch_adapter::ShardSampler second(client_, membership_);
  torch::serialize::InputArchive in;
  std::istringstream read(bytes.str());
  in.load_from(read);
  second.load(in);
  second.reset();
  auto batch = second.next(5);
  ASSERT_TRUE(batch.has_value());
  const std::vector<uint64_t> expected = Expected(0);
  EXPECT_EQ(
      std::vector<uint64_t>(batch->begin(), batch->end()),
      std::vector<uint64_t>(expected.begin() + 100, expected.begin() + 105));
}

// A job with balanced batches: each DataLoader batch is one micro-batch of
// the rank's plan whatever batch_size says, positions are step ends (of
// the batches the loop received, with workers), and a pass resumed at a
// step end gets the rest of the micro-batches.
TEST(TorchBatchSamplerTest, EachBatchIsAMicroBatchAndPositionsAreStepEnds) {
  constexpr uint64_t kSamples = 3000;
  testing::TestCluster cluster;
  auto client = cluster.NewClient();
  const std::string costs = testing::SpreadCosts(kSamples);
  const std::string sha256 = plan::Sha256Hex(costs);
  ASSERT_TRUE(client->PutCosts(sha256, costs).ok());
  shard::v1::JobSpec spec;
  spec.set_dataset_size(kSamples);
  spec.set_world_size(1);
  spec.mutable_batches()->set_batch_tokens(4096);
  spec.mutable_batches()->set_window(1000);
  spec.mutable_batches()->set_costs_sha256(sha256);
  auto joined = client->Join("balanced", "solo", spec, absl::Seconds(10));
  ASSERT_TRUE(joined.ok()) << joined.status();
  std::vector<client::MicroBatch> plan;
  {
    auto stream = client->OpenStream(*joined, 0, 0);
    while (true) {
      auto next = stream->NextBatch();
      ASSERT_TRUE(next.ok()) << next.status();
      if (!next->has_value()) break;
      plan.push_back(**std::move(next));
    }
  }
  ASSERT_GT(plan.size(), 10u);
  auto loader = torch_adapter::MakeShardDataLoader(
      IndexDataset(kSamples), torch_adapter::ShardSampler(client, *joined),
      torch::data::DataLoaderOptions().batch_size(7).workers(2));
  size_t received = 0;
  for (auto& batch : *loader) {
    std::vector<uint64_t> indices;
    for (auto& example : batch) indices.push_back(example.data.item<int64_t>());
    EXPECT_EQ(indices, plan[received].indices) << "batch " << received;
    EXPECT_EQ(loader->progress().Current().position, plan[received].step_end);
    if (++received == 10) break;
  }
  auto rest = torch_adapter::MakeShardDataLoader(
      IndexDataset(kSamples), torch_adapter::ShardSampler(client, *joined),
      torch::data::DataLoaderOptions().batch_size(7).workers(2));
  rest->progress().ResumeAt(loader->progress().Current());
  for (auto& batch : *rest) {
    std::vector<uint64_t> indices;
    for (auto& example : batch) indices.push_back(example.data.item<int64_t>());
    ASSERT_LT(received, plan.size());
    EXPECT_EQ(indices, plan[received].indices) << "batch " << received;
    ++received;
  }
  EXPECT_EQ(received, plan.size());
  EXPECT_EQ(rest->progress().Current().position, kSamples);
}

}  // namespace
}  // namespace shard
