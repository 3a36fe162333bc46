// A job deleted and re-created under the same id is another job: members,
// streams, commits and store calls of the deleted one never reach the new
// one, and the new one never sees the old one's orders or keys. Also the
// request checks found with it (member ids, the end of the last epoch).
#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "common/plan/spec/job_spec.h"
#include "gtest/gtest.h"
#include "tests/support/blocking_coordinator.h"
#include "tests/support/cursor_indices.h"
#include "tests/support/work_scale.h"

namespace shard::server {
namespace {

class JobIncarnationTest : public ::testing::Test {
 protected:
  JobIncarnationTest() : service_(Options()) {}

  static CoordinatorOptions Options() {
    CoordinatorOptions options;
    options.expire_leases_in_background = false;
    return options;
  }

  absl::Status Create(const std::string& job, uint64_t n, uint32_t world,
                      uint64_t seed = 0, uint32_t min_world = 0) {
    shard::v1::CreateJobRequest request;
    request.set_job_id(job);
    request.mutable_spec()->set_dataset_size(n);
    request.mutable_spec()->set_world_size(world);
    request.mutable_spec()->set_min_world_size(min_world);
    request.mutable_spec()->set_seed(seed);
    request.mutable_spec()->set_torch_randperm(
        shard::v1::TORCH_RANDPERM_LEGACY);
    return service_.CreateJob(request).status();
  }

  absl::StatusOr<shard::v1::JoinJobResponse> Join(const std::string& job,
                                                  const std::string& member) {
    shard::v1::JoinJobRequest request;
    request.set_job_id(job);
    request.set_member_id(member);
    return service_.JoinJob(request, absl::InfiniteFuture());
  }

  absl::Status ForceDelete(const std::string& job) {
    shard::v1::DeleteJobRequest request;
    request.set_job_id(job);
    request.set_force(true);
    return service_.DeleteJob(request).status();
  }

  absl::StatusOr<std::vector<uint64_t>> Stream(const std::string& job,
                                               uint64_t generation,
                                               uint64_t epoch,
                                               uint64_t start = 0) {
    shard::v1::StreamShardRequest request;
    request.set_job_id(job);
    request.set_generation(generation);
    request.set_epoch(epoch);
    request.set_start_position(start);
    absl::StatusOr<ShardCursor> cursor = service_.OpenShard(request);
    if (!cursor.ok()) return cursor.status();
    return testing::CursorIndices(*cursor);
  }

  absl::StatusOr<shard::v1::PreviewShardResponse> Preview(
      const std::string& job, uint64_t epoch, uint32_t limit = 1) {
    shard::v1::PreviewShardRequest request;
    request.set_job_id(job);
    request.set_epoch(epoch);
    request.set_limit(limit);
    return service_.PreviewShard(request, absl::InfiniteFuture());
  }

  absl::StatusOr<shard::v1::CommitProgressResponse> Commit(
      const std::string& job, uint64_t generation, uint64_t epoch,
      uint64_t position) {
    shard::v1::CommitProgressRequest request;
    request.set_job_id(job);
    request.set_generation(generation);
    request.set_epoch(epoch);
    request.set_position(position);
    request.set_member_id("a");  // Every test's committing member.
    return service_.CommitProgress(request);
  }

  absl::Status StoreSet(const std::string& job, uint64_t generation,
                        const std::string& key) {
    shard::v1::StoreSetRequest request;
    request.mutable_scope()->set_job_id(job);
    request.mutable_scope()->set_generation(generation);
    request.mutable_scope()->set_member_id("a");
    request.set_key(key);
    request.set_value(std::string(1 << 16, 'v'));
    return service_.store().StoreSet(request).status();
  }

  absl::StatusOr<int64_t> StoreCount(const std::string& job,
                                     uint64_t generation) {
    shard::v1::StoreCountRequest request;
    request.mutable_scope()->set_job_id(job);
    request.mutable_scope()->set_generation(generation);
    request.mutable_scope()->set_member_id("a");
    absl::StatusOr<shard::v1::StoreCountResponse> count =
        service_.store().StoreCount(request);
    if (!count.ok()) return count.status();
    return count->count();
  }

  absl::Status Heartbeat(const std::string& job, const std::string& member,
                         uint64_t generation) {
    shard::v1::HeartbeatRequest request;
    request.set_job_id(job);
    request.set_member_id(member);
    request.set_generation(generation);
    return service_.Heartbeat(request).status();
  }

  testing::BlockingCoordinator service_;
};

// Generations never repeat for a job id, so every call of a process of the
// deleted job is told that its job is gone (NOT_FOUND), even when the
// re-created job has a member of the same name.
TEST_F(JobIncarnationTest, CallsOfTheDeletedJobNeverReachTheNewOne) {
  ASSERT_TRUE(Create("x", 1000, 1).ok());
  const uint64_t old_generation = Join("x", "a")->generation();
  ASSERT_TRUE(ForceDelete("x").ok());
  ASSERT_TRUE(Create("x", 1000, 1).ok());
  absl::StatusOr<shard::v1::JoinJobResponse> rejoined = Join("x", "a");
  ASSERT_TRUE(rejoined.ok()) << rejoined.status();
  EXPECT_GT(rejoined->generation(), old_generation);

  EXPECT_EQ(Commit("x", old_generation, 0, 500).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(StoreSet("x", old_generation, "k").code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Stream("x", old_generation, 0).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(Heartbeat("x", "a", old_generation).code(),
            absl::StatusCode::kNotFound);
  shard::v1::GetJobRequest get;
  get.set_job_id("x");
  EXPECT_EQ(service_.GetJob(get)->committed_position(), 0u);
  EXPECT_EQ(*StoreCount("x", rejoined->generation()), 0);
  // The new job's own calls work.
  EXPECT_TRUE(Commit("x", rejoined->generation(), 0, 500).ok());
}

// The deleted job's order must not be served to the new job, even when its
// next epoch was still queued for preparation behind a large job's order
// when it was deleted.
TEST_F(JobIncarnationTest, ReCreatedJobStreamsItsOwnOrder) {
  ASSERT_TRUE(Create("large", testing::LargeOrderSize(20000000), 1).ok());
  ASSERT_TRUE(Preview("large", 0).ok());  // The prefetch thread takes 1.
  ASSERT_TRUE(Create("x", 100000, 1).ok());
  const uint64_t old_generation = Join("x", "a")->generation();
  ASSERT_TRUE(Stream("x", old_generation, 0).ok());  // Queues epoch 1.
  ASSERT_TRUE(ForceDelete("x").ok());
  ASSERT_TRUE(Create("x", 1000, 1, /*seed=*/7).ok());
  const uint64_t generation = Join("x", "a")->generation();
  // Let the prefetch thread finish the large order and run whatever was
  // queued behind it.
  ASSERT_TRUE(Preview("large", 1).ok());
  absl::SleepFor(absl::Milliseconds(300));
  absl::StatusOr<std::vector<uint64_t>> indices = Stream("x", generation, 1);
  ASSERT_TRUE(indices.ok()) << indices.status();

  shard::v1::JobSpec spec;
  spec.set_dataset_size(1000);
  spec.set_world_size(1);
  spec.set_seed(7);
  spec.set_torch_randperm(shard::v1::TORCH_RANDPERM_LEGACY);
  const plan::EpochOrder expected =
      plan::BuildEpochOrder(*plan::NormalizeJobSpec(spec, UINT64_MAX), 1);
  ASSERT_EQ(indices->size(), 1000u);
  for (uint64_t i = 0; i < 1000; ++i) {
    ASSERT_EQ((*indices)[i], expected.At(i)) << i;
  }
  absl::StatusOr<shard::v1::PreviewShardResponse> previewed =
      Preview("x", 1, 1000);
  ASSERT_TRUE(previewed.ok());
  EXPECT_TRUE(std::equal(previewed->indices().begin(),
                         previewed->indices().end(), indices->begin()));
}

// Store writes racing with a force-delete never land in the re-created
// job's store.
TEST_F(JobIncarnationTest, StoreWritesRacingADeleteNeverReachTheNewJob) {
  for (int round = 0; round < 20; ++round) {
    const std::string job = "race" + std::to_string(round);
    ASSERT_TRUE(Create(job, 10, 1).ok());
    const uint64_t old_generation = Join(job, "a")->generation();
    std::atomic<bool> stop{false};
    std::vector<std::thread> writers;
    for (int t = 0; t < 4; ++t) {
      writers.emplace_back([&, t] {
        for (int i = 0; !stop; ++i) {
          StoreSet(job, old_generation, std::to_string(t * 100000 + i))
              .IgnoreError();
        }
      });
    }
    ASSERT_TRUE(ForceDelete(job).ok());
    ASSERT_TRUE(Create(job, 10, 1).ok());
    const uint64_t generation = Join(job, "a")->generation();
    absl::SleepFor(absl::Milliseconds(5));
    stop = true;
    for (std::thread& writer : writers) writer.join();
    EXPECT_EQ(*StoreCount(job, generation), 0) << "round " << round;
  }
}

TEST_F(JobIncarnationTest, HeartbeatAndLeaveRefuseMalformedMemberIds) {
  ASSERT_TRUE(Create("x", 10, 1).ok());
  for (const std::string& bad :
       {std::string(), std::string("a b"), std::string(300, 'm')}) {
    EXPECT_EQ(Heartbeat("x", bad, 0).code(),
              absl::StatusCode::kInvalidArgument);
    shard::v1::LeaveRequest leave;
    leave.set_job_id("x");
    leave.set_member_id(bad);
    EXPECT_EQ(service_.Leave(leave).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

// Committing the end of the last epoch keeps a position past N (pad); an
// elastic shrink there must stream an empty remainder, not indices from an
// underflowed layout.
TEST_F(JobIncarnationTest, ShrinkAfterTheLastEpochEndedStreamsNothing) {
  constexpr uint64_t kLastEpoch = plan::kMaxEpoch;
  ASSERT_TRUE(Create("x", 10, 4, 0, /*min_world=*/1).ok());
  for (const char* m : {"a", "b", "c"}) ASSERT_TRUE(Join("x", m).ok());
  absl::StatusOr<shard::v1::JoinJobResponse> d = Join("x", "d");  // Forms.
  ASSERT_TRUE(d.ok());
  ASSERT_TRUE(d->world_formed());
  ASSERT_TRUE(Commit("x", d->generation(), kLastEpoch, 12).ok());
  shard::v1::LeaveRequest leave;
  leave.set_job_id("x");
  leave.set_member_id("d");
  ASSERT_TRUE(service_.Leave(leave).ok());
  // The survivors re-join (as they do on ABORTED): a world of 3 forms.
  for (const char* m : {"a", "b", "c"}) ASSERT_TRUE(Join("x", m).ok());
  shard::v1::GetJobRequest get;
  get.set_job_id("x");
  const shard::v1::Job job = *service_.GetJob(get);
  ASSERT_EQ(job.current_world_size(), 3u);
  for (uint32_t rank = 0; rank < 3; ++rank) {
    shard::v1::StreamShardRequest request;
    request.set_job_id("x");
    request.set_generation(job.generation());
    request.set_epoch(kLastEpoch);
    request.set_rank(rank);
    request.set_start_position(12);
    absl::StatusOr<ShardCursor> cursor = service_.OpenShard(request);
    ASSERT_TRUE(cursor.ok()) << cursor.status();
    EXPECT_TRUE(testing::CursorIndices(*cursor).empty());
  }
}

}  // namespace
}  // namespace shard::server
