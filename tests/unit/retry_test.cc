#include "shard/client/retry.h"

#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace shard::client {
namespace {

RetryPolicy FastPolicy() {
  RetryPolicy policy;
  policy.initial_backoff = absl::Milliseconds(1);
  policy.max_backoff = absl::Milliseconds(4);
  policy.deadline = absl::Seconds(5);
  return policy;
}

TEST(RetryTest, RetriesUnavailableUntilSuccess) {
  int attempts = 0;
  absl::Status status = RetryUnavailable(FastPolicy(), [&] {
    return ++attempts < 4 ? absl::UnavailableError("down") : absl::OkStatus();
  });
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(attempts, 4);
}

TEST(RetryTest, ReportsWhileRetryingAtMostOncePerInterval) {
  RetryPolicy policy = FastPolicy();
  policy.deadline = absl::Milliseconds(300);
  policy.report_every = absl::Milliseconds(50);
  std::vector<absl::Duration> left;
  policy.on_retrying = [&](const absl::Status& last, absl::Duration time_left) {
    EXPECT_EQ(last.message(), "down");
    left.push_back(time_left);
  };
  const absl::Time began = absl::Now();
  EXPECT_TRUE(absl::IsUnavailable(
      RetryUnavailable(policy, [] { return absl::UnavailableError("down"); })));
  const absl::Duration took = absl::Now() - began;
  // About one report per 50 ms of the 300 ms, never more.
  ASSERT_GE(left.size(), 2u);
  EXPECT_LE(left.size(), static_cast<size_t>(took / policy.report_every) + 1);
  for (size_t i = 1; i < left.size(); ++i) {
    EXPECT_LT(left[i], left[i - 1]);
    EXPECT_GE(left[i - 1] - left[i], policy.report_every - policy.max_backoff);
  }
  EXPECT_LE(left.front(),
            policy.deadline - policy.report_every + policy.max_backoff);
}

TEST(RetryTest, AQuickRecoveryIsNotReported) {
  RetryPolicy policy = FastPolicy();
  int reports = 0, attempts = 0;
  policy.on_retrying = [&](const absl::Status&, absl::Duration) { ++reports; };
  EXPECT_TRUE(RetryUnavailable(policy, [&] {
                return ++attempts < 3 ? absl::UnavailableError("down")
                                      : absl::OkStatus();
              }).ok());
  EXPECT_EQ(reports, 0);
}

TEST(RetryTest, NeverRetriesInvalidArgument) {
  int attempts = 0;
  absl::Status status = RetryUnavailable(FastPolicy(), [&] {
    ++attempts;
    return absl::InvalidArgumentError("bad");
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(attempts, 1);
}

TEST(RetryTest, GivesUpAtTheDeadline) {
  RetryPolicy policy = FastPolicy();
  policy.deadline = absl::Milliseconds(30);
  int attempts = 0;
  absl::Status status = RetryUnavailable(policy, [&] {
    ++attempts;
    return absl::UnavailableError("down");
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_GT(attempts, 1);
  EXPECT_LT(attempts, 1000);
}

TEST(RetryTest, BackoffDoublesUpToTheCap) {
  RetryPolicy policy;
  policy.initial_backoff = absl::Milliseconds(100);
  policy.max_backoff = absl::Milliseconds(300);
  Backoff backoff(policy);
  const absl::Status down = absl::UnavailableError("connection refused");
  const absl::Duration first = backoff.Next(down);
  EXPECT_GE(first, absl::Milliseconds(50));
  EXPECT_LE(first, absl::Milliseconds(100));
  backoff.Next(down);
  const absl::Duration third = backoff.Next(down);
  EXPECT_GE(third, absl::Milliseconds(150));
  EXPECT_LE(third, absl::Milliseconds(300));
}

// A standby's answer (a leader named, or one being elected) is retried at
// the short fixed pace however long the failover lasts: the client reaches
// the new leader within that pace of its election, not after a backoff
// grown to seconds meanwhile.
TEST(RetryTest, AStandbysAnswerIsRetriedAtAFixedPace) {
  RetryPolicy policy;
  policy.soon_pace = absl::Milliseconds(100);
  policy.max_backoff = absl::Seconds(5);
  Backoff backoff(policy);
  const absl::Status standby = MarkedRetrySoon(
      absl::UnavailableError("standing by; the leader is b:7070"));
  EXPECT_TRUE(IsRetrySoon(standby));
  EXPECT_FALSE(IsRetrySoon(absl::UnavailableError("refused")));
  for (int attempt = 0; attempt < 30; ++attempt) {
    const absl::Duration pause = backoff.Next(standby);
    EXPECT_GE(pause, absl::Milliseconds(50));
    EXPECT_LE(pause, absl::Milliseconds(100)) << "attempt " << attempt;
  }
  // The exponential backoff did not grow meanwhile.
  EXPECT_LE(backoff.Next(absl::UnavailableError("refused")),
            policy.initial_backoff);
}

}  // namespace
}  // namespace shard::client
