// The libtorch sampler adapter inside a real DataLoader: each pass over the
// loader is the next epoch, the progress handle survives the move into the
// loader, and ResumeAt / save+load continue mid-epoch.
#include <algorithm>
#include <vector>

#include "gtest/gtest.h"
#include "shard/client/torch/shard_sampler.h"
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

}  // namespace
}  // namespace shard
