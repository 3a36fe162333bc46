// Joins a shardd job as one rank and streams epochs through the libtorch
// sampler adapter in a DataLoader, printing each epoch's indices in the order
// the loader yields them:
//   epoch E rank R: i0 i1 i2 ...
// Usage: stream_epochs ADDRESS JOB_ID MEMBER_ID [EPOCHS]
// The job must exist (shardctl create-job); the program waits up to 60 s for
// the job's world to fill, so start one per rank. A heartbeat keeps the
// membership alive meanwhile, and the ranks meet at a barrier in the job's
// rendezvous store before leaving, because a member that leaves ends the
// generation for every rank still streaming.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "shard/client/coordinator_client.h"
#include "shard/client/heartbeater.h"
#include "shard/client/torch/shard_data_loader.h"
#include "shard/client/torch/shard_sampler.h"
#include "shard/version.h"
#include "torch/torch.h"

namespace {

// A dataset whose examples are their own indices, so batches show the order.
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

// Barrier: the last rank to finish sets "done"; everyone waits for it, then
// leaves. The exit code.
int MeetAndLeave(shard::client::CoordinatorClient& client,
                 const shard::client::Membership& membership) {
  auto finished = client.StoreAdd(membership, "finished", 1);
  if (!finished.ok()) {
    std::cerr << "barrier: " << finished.status() << "\n";
    return 1;
  }
  if (*finished == membership.world_size) {
    absl::Status done = client.StoreSet(membership, "done", "1");
    if (!done.ok()) std::cerr << "barrier: " << done << "\n";
  }
  auto all_done = client.StoreWait(membership, {"done"}, absl::Minutes(1));
  if (absl::IsAborted(all_done.status())) {
    // The generation ended: a rank that saw "done" left (by then every rank
    // had streamed all its epochs), or a rank was lost. Either way this
    // rank's epochs are complete.
    return 0;
  }
  if (!all_done.ok() || !*all_done) {
    std::cerr << "barrier: the other ranks did not finish\n";
    return 1;
  }
  absl::Status left = client.Leave(membership);
  if (!left.ok()) std::cerr << "leave: " << left << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    std::cerr << "usage: stream_epochs ADDRESS JOB_ID MEMBER_ID [EPOCHS]\n";
    return 2;
  }
  const int epochs = argc == 5 ? std::atoi(argv[4]) : 2;
  std::cerr << "shard SDK " << shard::Version() << "\n";

  shard::client::ClientOptions options;
  options.address = argv[1];
  auto client = shard::client::CoordinatorClient::Connect(options);
  if (!client.ok()) {
    std::cerr << "connect: " << client.status() << "\n";
    return 1;
  }
  std::shared_ptr<shard::client::CoordinatorClient> shared = std::move(*client);
  auto membership =
      shared->Join(argv[2], argv[3], std::nullopt, absl::Seconds(60));
  if (!membership.ok()) {
    std::cerr << "join: " << membership.status() << "\n";
    return 1;
  }

  shard::client::Heartbeater heartbeater(shared, *membership, absl::Seconds(2));
  // The loader counts the batches this loop receives (the position a
  // commit would record), also with workers prefetching ahead of it.
  auto loader = shard::torch_adapter::MakeShardDataLoader(
      IndexDataset(membership->spec.dataset_size()),
      shard::torch_adapter::ShardSampler(shared, *membership),
      torch::data::DataLoaderOptions().batch_size(32).workers(2));
  for (int e = 0; e < epochs; ++e) {
    std::vector<int64_t> indices;
    for (auto& batch : *loader) {
      for (auto& example : batch)
        indices.push_back(example.data.item<int64_t>());
    }
    std::cout << "epoch " << loader->progress().Current().epoch << " rank "
              << membership->rank << ":";
    for (int64_t index : indices) std::cout << " " << index;
    std::cout << "\n";
  }
  std::cout.flush();
  return MeetAndLeave(*shared, *membership);
}
