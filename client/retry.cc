#include "shard/client/retry.h"

#include <algorithm>
#include <random>

#include "absl/time/clock.h"

namespace shard::client {

Backoff::Backoff(const RetryPolicy& policy)
    : policy_(policy), current_(policy.initial_backoff) {}

absl::Duration Backoff::Next() {
  thread_local std::minstd_rand jitter(std::random_device{}());
  const double fraction =
      0.5 + 0.5 * std::uniform_real_distribution<double>(0, 1)(jitter);
  const absl::Duration pause = current_ * fraction;
  current_ = std::min(current_ * 2, policy_.max_backoff);
  return pause;
}

void Backoff::Reset() { current_ = policy_.initial_backoff; }

absl::Status RetryUnavailable(const RetryPolicy& policy,
                              absl::FunctionRef<absl::Status()> attempt) {
  const absl::Time started = absl::Now();
  const absl::Time give_up = started + policy.deadline;
  absl::Time reported = started;
  Backoff backoff(policy);
  while (true) {
    absl::Status status = attempt();
    if (!absl::IsUnavailable(status)) return status;
    const absl::Duration pause = backoff.Next();
    const absl::Time now = absl::Now();
    if (now + pause > give_up) return status;
    // Announced before a pause that ends report_every or more after the
    // previous report (or the first attempt).
    if (policy.on_retrying && now + pause - reported >= policy.report_every) {
      policy.on_retrying(status, give_up - now);
      reported = now;
    }
    absl::SleepFor(pause);
  }
}

}  // namespace shard::client
