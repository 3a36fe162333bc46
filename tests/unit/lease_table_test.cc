// LeaseTable on a fake clock: leases, paced leases, waiting joins, stalls
// and idle jobs.
#include "server/core/lease_table.h"

#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace shard::server {
namespace {

constexpr absl::Duration kLease = absl::Seconds(10);

class LeaseTableTest : public ::testing::Test {
 protected:
  absl::Time now_ = absl::FromUnixSeconds(1000);
  LeaseTable table_{[this] { return now_; }};
};

TEST_F(LeaseTableTest, AMemberExpiresOnlyAfterAFullLeaseOfSilence) {
  table_.Renew("job", "a");
  now_ += kLease;
  EXPECT_FALSE(table_.Expired("job", "a", kLease));
  now_ += absl::Milliseconds(1);
  EXPECT_TRUE(table_.Expired("job", "a", kLease));
  table_.Renew("job", "a");
  EXPECT_FALSE(table_.Expired("job", "a", kLease));
}

TEST_F(LeaseTableTest, AMemberAskedForALongPaceKeepsThreePacesOfLease) {
  table_.RenewAtPace("job", "a", absl::Seconds(5));  // Every 5 s.
  now_ += absl::Seconds(15);
  EXPECT_FALSE(table_.Expired("job", "a", kLease));
  now_ += absl::Milliseconds(1);
  EXPECT_TRUE(table_.Expired("job", "a", kLease));
  // Another call of the member keeps the pace it was asked for.
  table_.Renew("job", "a");
  now_ += absl::Seconds(15);
  EXPECT_FALSE(table_.Expired("job", "a", kLease));
  // A heartbeat asked for no pace: the plain lease again.
  table_.RenewAtPace("job", "a", absl::ZeroDuration());
  now_ += kLease + absl::Milliseconds(1);
  EXPECT_TRUE(table_.Expired("job", "a", kLease));
}

TEST(PaceAndLeaseTest, SpreadTheRanksOverTheRateAndStretchTheLease) {
  EXPECT_EQ(HeartbeatPace(100000, 20000), absl::Seconds(5));
  EXPECT_EQ(HeartbeatPace(1000, 20000), absl::Milliseconds(50));
  EXPECT_EQ(HeartbeatPace(100000, 0), absl::ZeroDuration());
  EXPECT_EQ(LeaseAtPace(kLease, absl::Seconds(5)), absl::Seconds(15));
  EXPECT_EQ(LeaseAtPace(kLease, absl::Seconds(1)), kLease);
}

TEST_F(LeaseTableTest, AMemberNeverSeenStartsItsLeaseAtTheFirstCheck) {
  EXPECT_FALSE(table_.Expired("job", "recovered", kLease));
  now_ += kLease + absl::Seconds(1);
  EXPECT_TRUE(table_.Expired("job", "recovered", kLease));
}

TEST_F(LeaseTableTest, AWaitingJoinKeepsTheMemberAliveUntilTheLastWaitEnds) {
  table_.Renew("job", "a");
  table_.BeginWait("job", "a");
  table_.BeginWait("job", "a");  // A retried join overlaps the first.
  now_ += 10 * kLease;
  EXPECT_FALSE(table_.Expired("job", "a", kLease));
  table_.EndWait("job", "a");
  now_ += 10 * kLease;
  EXPECT_FALSE(table_.Expired("job", "a", kLease));
  table_.EndWait("job", "a");
  now_ += kLease + absl::Seconds(1);
  EXPECT_TRUE(table_.Expired("job", "a", kLease));
}

TEST_F(LeaseTableTest, TheCoordinatorsOwnStallIsNotCountedAgainstMembers) {
  table_.Renew("job", "a");
  now_ += kLease + absl::Seconds(5);
  table_.AddStall(absl::Seconds(6));
  EXPECT_FALSE(table_.Expired("job", "a", kLease));
  now_ += absl::Seconds(2);
  EXPECT_TRUE(table_.Expired("job", "a", kLease));
}

TEST_F(LeaseTableTest, ForgettingAMemberOrItsJobRestartsItsLease) {
  table_.Renew("job", "a");
  table_.Renew("job2", "a");
  now_ += kLease + absl::Seconds(1);
  table_.Forget("job", "a");
  EXPECT_FALSE(table_.Expired("job", "a", kLease));
  table_.ForgetJob("job2");
  EXPECT_FALSE(table_.Expired("job2", "a", kLease));
}

TEST_F(LeaseTableTest, AJobIsIdleAfterTheTtlWithoutMembersOrCalls) {
  constexpr absl::Duration kTtl = absl::Hours(1);
  EXPECT_FALSE(table_.JobIdle("job", /*has_members=*/false, kTtl));
  now_ += kTtl;
  EXPECT_TRUE(table_.JobIdle("job", false, kTtl));
  table_.TouchJob("job");
  EXPECT_FALSE(table_.JobIdle("job", false, kTtl));
  now_ += 2 * kTtl;
  EXPECT_FALSE(table_.JobIdle("job", /*has_members=*/true, kTtl));
  now_ += kTtl - absl::Seconds(1);
  EXPECT_FALSE(table_.JobIdle("job", false, kTtl));
  now_ += absl::Seconds(1);
  EXPECT_TRUE(table_.JobIdle("job", false, kTtl));
  table_.ForgetJob("job");
  EXPECT_FALSE(table_.JobIdle("job", false, kTtl));
}

}  // namespace
}  // namespace shard::server
