// A coordinator asked for fewer heartbeats than its ranks would send
// (--max-heartbeat-rate): each heartbeat's answer asks for the next one
// later, and the members' leases stretch to match, so a member that
// heartbeats at the pace it was asked for keeps its place. The pace and
// the waiting-call limit count the ranks held (members, or those a forming
// world waits for), never a job's allowed world size. Fake clock.
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/support/blocking_coordinator.h"

namespace shard::server {
namespace {

class HeartbeatPaceTest : public ::testing::Test {
 protected:
  // A coordinator with a 2 s lease asking for at most `max_rate`
  // heartbeats a second.
  void Start(uint64_t max_rate, size_t max_waiting_calls = 10000) {
    CoordinatorOptions options;
    options.max_waiting_calls = max_waiting_calls;
    options.lease = absl::Seconds(2);
    options.max_heartbeat_rate = max_rate;
    options.expire_leases_in_background = false;
    options.now = [this] { return now_; };
    service_.emplace(options);
  }

  void FormWorldOfThree() {
    shard::v1::CreateJobRequest create;
    create.set_job_id("job");
    create.mutable_spec()->set_dataset_size(30);
    create.mutable_spec()->set_world_size(3);
    ASSERT_TRUE(service_->CreateJob(create).ok());
    for (const char* member : {"a", "b", "c"}) {
      shard::v1::JoinJobRequest join;
      join.set_job_id("job");
      join.set_member_id(member);
      ASSERT_TRUE(service_->JoinJob(join, absl::InfiniteFuture()).ok());
    }
  }

  void CreateJob(const std::string& id, uint64_t size, uint32_t world,
                 uint32_t max_world = 0) {
    shard::v1::CreateJobRequest create;
    create.set_job_id(id);
    create.mutable_spec()->set_dataset_size(size);
    create.mutable_spec()->set_world_size(world);
    if (max_world != 0) {
      create.mutable_spec()->set_min_world_size(1);
      create.mutable_spec()->set_max_world_size(max_world);
    }
    ASSERT_TRUE(service_->CreateJob(create).ok());
  }

  absl::StatusOr<shard::v1::JoinJobResponse> Join(const std::string& job,
                                                  const std::string& member) {
    shard::v1::JoinJobRequest join;
    join.set_job_id(job);
    join.set_member_id(member);
    return service_->JoinJob(join, absl::InfiniteFuture());
  }

  uint32_t PaceMs() {
    absl::StatusOr<shard::v1::HeartbeatResponse> answer = Heartbeat("a");
    EXPECT_TRUE(answer.ok()) << answer.status();
    return answer.ok() ? answer->next_heartbeat_ms() : 0;
  }

  absl::StatusOr<shard::v1::HeartbeatResponse> Heartbeat(
      const std::string& member) {
    shard::v1::HeartbeatRequest request;
    request.set_job_id("job");
    request.set_member_id(member);
    request.set_generation(1);
    return service_->Heartbeat(request);
  }

  uint32_t Members() {
    shard::v1::GetJobRequest request;
    request.set_job_id("job");
    return service_->GetJob(request)->joined_members();
  }

  absl::Time now_ = absl::FromUnixSeconds(1000);
  std::optional<testing::BlockingCoordinator> service_;
};

TEST_F(HeartbeatPaceTest, TheAnswerAsksForTheNextHeartbeatAfterRanksOverRate) {
  Start(/*max_rate=*/1);  // 3 ranks: one heartbeat each 3 s.
  FormWorldOfThree();
  absl::StatusOr<shard::v1::HeartbeatResponse> answer = Heartbeat("a");
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->next_heartbeat_ms(), 3000u);
}

TEST_F(HeartbeatPaceTest, MembersAtTheAskedPaceKeepTheirPlaceBeyondTheLease) {
  Start(/*max_rate=*/1);
  FormWorldOfThree();
  // Joined, never heartbeated: three paces (9 s), not the 2 s lease.
  now_ += absl::Seconds(8);
  service_->ExpireLeases();
  ASSERT_EQ(Members(), 3u);
  for (int beat = 0; beat < 3; ++beat) {
    for (const char* member : {"a", "b", "c"}) {
      ASSERT_TRUE(Heartbeat(member).ok());
    }
    now_ += absl::Seconds(3);
    service_->ExpireLeases();
    EXPECT_EQ(Members(), 3u) << "after heartbeat round " << beat;
  }
  // Silent for longer than three paces: gone.
  now_ += absl::Seconds(6) + absl::Milliseconds(1);
  service_->ExpireLeases();
  EXPECT_EQ(Members(), 0u);
}

TEST_F(HeartbeatPaceTest, NoRateLeavesTheMembersTheirOwnIntervalAndLease) {
  Start(/*max_rate=*/0);
  FormWorldOfThree();
  absl::StatusOr<shard::v1::HeartbeatResponse> answer = Heartbeat("a");
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(answer->next_heartbeat_ms(), 0u);
  now_ += absl::Seconds(2) + absl::Milliseconds(1);
  service_->ExpireLeases();
  EXPECT_EQ(Members(), 0u);
}

// An elastic job allowed 2^20 ranks and a 100,000-rank job nobody is in
// count no ranks: the world of three keeps its own pace and its 2 s lease.
TEST_F(HeartbeatPaceTest, JobsNobodyIsInCountNoRanks) {
  Start(/*max_rate=*/1);
  FormWorldOfThree();
  CreateJob("elastic", 2000000, 1, /*max_world=*/1 << 20);
  CreateJob("finished", 200000, 100000);
  EXPECT_EQ(PaceMs(), 3000u);
  ASSERT_TRUE(Join("elastic", "e0").ok());  // forms a world of one
  EXPECT_EQ(PaceMs(), 4000u);
}

// A forming world counts the ranks it waits for: its joins are paced as
// the ranks about to come, not as the few that came.
TEST_F(HeartbeatPaceTest, AFormingWorldCountsTheRanksItWaitsFor) {
  Start(/*max_rate=*/1);
  FormWorldOfThree();
  CreateJob("forming", 1000, 5);
  ASSERT_TRUE(Join("forming", "f0").ok());  // no wait: answered at once
  EXPECT_EQ(PaceMs(), 8000u);
}

// With --max-waiting-calls 0 the join that creates its job and waits for
// the world counts the job's ranks before it is decided: the world forms.
TEST_F(HeartbeatPaceTest, TheJoinThatCreatesAJobCountsItsRanksBeforeWaiting) {
  Start(/*max_rate=*/1, /*max_waiting_calls=*/0);
  std::vector<absl::StatusOr<shard::v1::JoinJobResponse>> answers(2);
  std::vector<std::thread> joins;
  for (int i = 0; i < 2; ++i) {
    joins.emplace_back([&, i] {
      shard::v1::JoinJobRequest join;
      join.set_job_id("new");
      join.set_member_id("m" + std::to_string(i));
      join.mutable_spec()->set_dataset_size(10);
      join.mutable_spec()->set_world_size(2);
      join.set_wait_for_world_ms(60000);
      answers[i] = service_->JoinJob(join, absl::InfiniteFuture());
    });
  }
  for (std::thread& join : joins) join.join();
  for (const auto& answer : answers) {
    ASSERT_TRUE(answer.ok()) << answer.status();
    EXPECT_TRUE(answer->world_formed());
  }
}

}  // namespace
}  // namespace shard::server
