// A coordinator asked for fewer heartbeats than its ranks would send
// (--max-heartbeat-rate): each heartbeat's answer asks for the next one
// later, and the members' leases stretch to match, so a member that
// heartbeats at the pace it was asked for keeps its place. Fake clock.
#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "tests/support/blocking_coordinator.h"

namespace shard::server {
namespace {

class HeartbeatPaceTest : public ::testing::Test {
 protected:
  // A coordinator with a 2 s lease asking for at most `max_rate`
  // heartbeats a second.
  void Start(uint64_t max_rate) {
    CoordinatorOptions options;
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

}  // namespace
}  // namespace shard::server
