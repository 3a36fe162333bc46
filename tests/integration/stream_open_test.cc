// Opening a stream never waits behind another job's epoch order: while ten
// large jobs' first orders are being computed, a small job's stream starts
// at once. A stream follows its order's shuffle: its first chunk comes
// before the order is finished, and fits a new stream's flow-control
// window.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "prometheus/metric_family.h"
#include "server/metrics/server_metrics.h"
#include "tests/support/test_cluster.h"
#include "tests/support/work_scale.h"

namespace shard::testing {
namespace {

// Creates a one-rank job, joins it and returns the generation.
uint64_t OneRankJob(shard::v1::Coordinator::Stub* stub, const std::string& id,
                    uint64_t size) {
  shard::v1::JoinJobRequest join;
  join.set_job_id(id);
  join.set_member_id("m");
  join.mutable_spec()->set_dataset_size(size);
  join.mutable_spec()->set_world_size(1);
  shard::v1::JoinJobResponse joined;
  grpc::ClientContext context;
  const grpc::Status status = stub->JoinJob(&context, join, &joined);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(joined.world_formed());
  return joined.generation();
}

// Opens the job's epoch 0 stream at `start` and reads its first chunk.
bool FirstChunk(shard::v1::Coordinator::Stub* stub, const std::string& id,
                uint64_t generation, uint64_t start = 0) {
  shard::v1::StreamShardRequest request;
  request.set_job_id(id);
  request.set_generation(generation);
  request.set_start_position(start);
  grpc::ClientContext context;
  auto reader = stub->StreamShard(&context, request);
  shard::v1::IndexChunk chunk;
  const bool read = reader->Read(&chunk);
  context.TryCancel();
  return read;
}

TEST(StreamOpenTest, ASmallJobDoesNotWaitForOtherJobsOrders) {
  TestCluster cluster;
  auto stub = cluster.NewStub();
  constexpr int kLargeJobs = 10;
  // 80 MB orders, shuffled (a tenth in a sanitized build).
  constexpr uint64_t kLargeSize = LargeOrderSize(20000000);
  std::vector<uint64_t> generations;
  for (int i = 0; i < kLargeJobs; ++i) {
    generations.push_back(
        OneRankJob(stub.get(), absl::StrCat("large-", i), kLargeSize));
  }
  const uint64_t small_generation = OneRankJob(stub.get(), "small", 1000);

  std::atomic<int> large_done{0};
  std::vector<std::thread> large;
  for (int i = 0; i < kLargeJobs; ++i) {
    large.emplace_back([&, i] {
      // The last position: its chunk needs the whole order.
      EXPECT_TRUE(FirstChunk(stub.get(), absl::StrCat("large-", i),
                             generations[i], kLargeSize - 1));
      ++large_done;
    });
  }
  absl::SleepFor(absl::Milliseconds(30));  // Let the large opens arrive.
  ASSERT_TRUE(FirstChunk(stub.get(), "small", small_generation));
  const int large_done_before_small = large_done.load();
  for (std::thread& thread : large) thread.join();
  // The large orders finish one after another (about 0.3 s each); a small
  // job queued behind them would see most of them done. (Not zero: on a
  // loaded machine the first may finish while this thread waits for a
  // core.)
  EXPECT_LT(large_done_before_small, kLargeJobs / 2)
      << "the small job's stream waited for other jobs' orders";
}

TEST(StreamOpenTest, AStreamStartsBeforeItsOrderIsFinished) {
  TestCluster cluster;
  auto stub = cluster.NewStub();
  // 200 MB, shuffled: about 0.5 s (a tenth in a sanitized build).
  constexpr uint64_t kSize = LargeOrderSize(50000000);
  const uint64_t generation = OneRankJob(stub.get(), "job", kSize);
  std::atomic<bool> end_read{false};
  std::thread end([&] {
    // The last position: its chunk needs the whole order.
    EXPECT_TRUE(FirstChunk(stub.get(), "job", generation, kSize - 1));
    end_read = true;
  });
  ASSERT_TRUE(FirstChunk(stub.get(), "job", generation));
  const bool end_read_before_start = end_read.load();
  end.join();
  EXPECT_FALSE(end_read_before_start)
      << "the stream's first chunk waited for the whole order";
}

// A stream's first chunk fits HTTP/2's initial window of a new stream
// (65,535 bytes): it never waits for the client's window update. The next
// ones hold the default 16,384 indices.
TEST(StreamOpenTest, TheFirstChunkFitsANewStreamsWindow) {
  TestCluster cluster;
  auto stub = cluster.NewStub();
  const uint64_t generation = OneRankJob(stub.get(), "job", 100000);
  shard::v1::StreamShardRequest request;
  request.set_job_id("job");
  request.set_generation(generation);
  grpc::ClientContext context;
  auto reader = stub->StreamShard(&context, request);
  shard::v1::IndexChunk first, second;
  ASSERT_TRUE(reader->Read(&first));
  ASSERT_TRUE(reader->Read(&second));
  context.TryCancel();
  EXPECT_GT(first.packed_indices().size(), 0u);
  EXPECT_LE(first.ByteSizeLong(), 32u * 1024 + 64);
  EXPECT_EQ(second.packed_indices().size(), 16384u * 4);
}

double ActiveStreams(const metrics::ServerMetrics& metrics) {
  for (const prometheus::MetricFamily& family :
       metrics.registry().lock()->Collect()) {
    if (family.name == "shard_active_streams") {
      return family.metric.at(0).gauge.value;
    }
  }
  return -1;
}

// The gauge once it reads `expected`, or after a minute (the server counts
// a stream on its own threads, a moment after the client sees it).
double AwaitActiveStreams(metrics::ServerMetrics& metrics, double expected) {
  const absl::Time give_up = absl::Now() + absl::Minutes(1);
  while (ActiveStreams(metrics) != expected && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  return ActiveStreams(metrics);
}

TEST(StreamOpenTest, ActiveStreamsGaugeCountsOpenStreams) {
  metrics::ServerMetrics metrics;
  server::CoordinatorServerOptions options;
  options.metrics = &metrics;
  TestCluster cluster({}, options);
  auto stub = cluster.NewStub();
  const uint64_t generation = OneRankJob(stub.get(), "job", 100000);
  EXPECT_EQ(ActiveStreams(metrics), 0);
  {
    shard::v1::StreamShardRequest request;
    request.set_job_id("job");
    request.set_generation(generation);
    request.set_max_chunk_indices(16);
    grpc::ClientContext context;
    auto reader = stub->StreamShard(&context, request);
    shard::v1::IndexChunk chunk;
    ASSERT_TRUE(reader->Read(&chunk));
    EXPECT_EQ(AwaitActiveStreams(metrics, 1), 1);
    context.TryCancel();
    while (reader->Read(&chunk)) {
    }
  }
  EXPECT_EQ(AwaitActiveStreams(metrics, 0), 0);
}

}  // namespace
}  // namespace shard::testing
