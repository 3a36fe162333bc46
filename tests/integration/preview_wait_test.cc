// A read-only call never holds up the calls that change state: previews of
// epochs whose orders do not fit in the order-cache budget wait for memory
// without taking a thread, and give up after max_wait (RESOURCE_EXHAUSTED
// naming the budget) rather than at the client's own deadline.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/support/test_cluster.h"

namespace shard::testing {
namespace {

constexpr uint64_t kSize = 1000000;  // A 4 MB shuffled order.
constexpr uint64_t kOrderBytes = 4 * kSize;

std::chrono::system_clock::time_point In(absl::Duration duration) {
  return absl::ToChronoTime(absl::Now() + duration);
}

server::CoordinatorOptions OneOrderBudget(absl::Duration max_wait) {
  server::CoordinatorOptions options;
  options.order_cache_bytes = kOrderBytes + kOrderBytes / 2;
  options.max_wait = max_wait;
  return options;
}

class PreviewWaitTest : public ::testing::Test {
 protected:
  explicit PreviewWaitTest(absl::Duration max_wait = absl::Minutes(2))
      : cluster_(OneOrderBudget(max_wait)), stub_(cluster_.NewStub()) {}

  // Joins a one-rank job and opens its epoch 0 stream, which holds that
  // epoch's order (the whole budget but half an order) while open.
  void HoldTheBudgetWithAStream() {
    shard::v1::JoinJobRequest join;
    join.set_job_id("job");
    join.set_member_id("m");
    join.mutable_spec()->set_dataset_size(kSize);
    join.mutable_spec()->set_world_size(1);
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->JoinJob(&context, join, &joined_).ok());
    shard::v1::StreamShardRequest request;
    request.set_job_id("job");
    request.set_generation(joined_.generation());
    request.set_max_chunk_indices(16);
    reader_ = stub_->StreamShard(&stream_context_, request);
    shard::v1::IndexChunk chunk;
    ASSERT_TRUE(reader_->Read(&chunk));
  }

  grpc::Status Preview(uint64_t epoch, absl::Duration deadline) {
    shard::v1::PreviewShardRequest request;
    request.set_job_id("job");
    request.set_epoch(epoch);
    shard::v1::PreviewShardResponse response;
    grpc::ClientContext context;
    context.set_deadline(In(deadline));
    return stub_->PreviewShard(&context, request, &response);
  }

  void TearDown() override {
    if (reader_ != nullptr) {
      stream_context_.TryCancel();
      shard::v1::IndexChunk chunk;
      while (reader_->Read(&chunk)) {
      }
      reader_->Finish().IgnoreError();
    }
  }

  TestCluster cluster_;
  std::unique_ptr<shard::v1::Coordinator::Stub> stub_;
  shard::v1::JoinJobResponse joined_;
  grpc::ClientContext stream_context_;
  std::unique_ptr<grpc::ClientReader<shard::v1::IndexChunk>> reader_;
};

TEST_F(PreviewWaitTest, WaitingPreviewsDoNotStallMutations) {
  HoldTheBudgetWithAStream();
  // Sixteen previews of epochs whose orders cannot fit while the stream is
  // open: each waits for memory (longer than this test runs).
  constexpr int kPreviews = 16;
  std::vector<std::thread> previews;
  std::vector<grpc::StatusCode> codes(kPreviews);
  for (int i = 0; i < kPreviews; ++i) {
    previews.emplace_back([this, i, &codes] {
      codes[i] = Preview(5 + i, absl::Seconds(20)).error_code();
    });
  }
  absl::SleepFor(absl::Milliseconds(500));  // Let them all arrive and wait.

  shard::v1::CreateJobRequest create;
  create.set_job_id("other");
  create.mutable_spec()->set_dataset_size(100);
  create.mutable_spec()->set_world_size(1);
  create.mutable_spec()->set_shuffle(false);
  shard::v1::Job job;
  grpc::ClientContext create_context;
  create_context.set_deadline(In(absl::Seconds(5)));
  const grpc::Status created = stub_->CreateJob(&create_context, create, &job);
  EXPECT_TRUE(created.ok())
      << created.error_code() << " " << created.error_message();

  shard::v1::CommitProgressRequest commit;
  commit.set_job_id("job");
  commit.set_generation(joined_.generation());
  commit.set_position(1);
  commit.set_member_id("m");
  shard::v1::CommitProgressResponse committed;
  grpc::ClientContext commit_context;
  commit_context.set_deadline(In(absl::Seconds(5)));
  const grpc::Status status =
      stub_->CommitProgress(&commit_context, commit, &committed);
  EXPECT_TRUE(status.ok()) << status.error_code() << " "
                           << status.error_message();

  // Closing the stream frees the budget: the previews then complete (one
  // order at a time, each released as its preview is answered).
  stream_context_.TryCancel();
  for (std::thread& thread : previews) thread.join();
  for (int i = 0; i < kPreviews; ++i) {
    EXPECT_EQ(codes[i], grpc::StatusCode::OK) << "preview " << i;
  }
}

class ShortWaitPreviewTest : public PreviewWaitTest {
 protected:
  ShortWaitPreviewTest() : PreviewWaitTest(absl::Seconds(1)) {}
};

TEST_F(ShortWaitPreviewTest, PreviewWaitIsBoundedByMaxWait) {
  HoldTheBudgetWithAStream();
  const absl::Time began = absl::Now();
  const grpc::Status status = Preview(7, absl::Seconds(60));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << status.error_message();
  EXPECT_NE(status.error_message().find("budget"), std::string::npos)
      << status.error_message();
  // Ended by max_wait (1 s), not by the call's own 60 s deadline.
  EXPECT_LT(absl::Now() - began, absl::Seconds(30));
}

}  // namespace
}  // namespace shard::testing
