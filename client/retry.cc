#include "shard/client/retry.h"

#include <algorithm>
#include <random>

#include "absl/time/clock.h"

namespace shard::client {

namespace {

constexpr absl::string_view kRetrySoonPayload = "shard.retry_soon";

// A random 50..100% of `pause`.
absl::Duration Jittered(absl::Duration pause) {
  thread_local std::minstd_rand jitter(std::random_device{}());
  return pause *
         (0.5 + 0.5 * std::uniform_real_distribution<double>(0, 1)(jitter));
}

}  // namespace

absl::Status MarkedRetrySoon(absl::Status status) {
  status.SetPayload(kRetrySoonPayload, absl::Cord("1"));
  return status;
}

bool IsRetrySoon(const absl::Status& status) {
  return status.GetPayload(kRetrySoonPayload).has_value();
}

Backoff::Backoff(const RetryPolicy& policy)
    : policy_(policy), current_(policy.initial_backoff) {}

absl::Duration Backoff::Next(const absl::Status& last) {
  if (IsRetrySoon(last)) return Jittered(policy_.soon_pace);
  const absl::Duration pause = Jittered(current_);
  current_ = std::min(current_ * 2, policy_.max_backoff);
  return pause;
}

void Backoff::Reset() { current_ = policy_.initial_backoff; }

absl::Status RetryUnavailable(const RetryPolicy& policy,
                              absl::FunctionRef<absl::Status()> attempt,
                              absl::FunctionRef<void(absl::Duration)> pause) {
  const absl::Time started = absl::Now();
  const absl::Time give_up = started + policy.deadline;
  absl::Time reported = started;
  Backoff backoff(policy);
  while (true) {
    absl::Status status = attempt();
    if (!absl::IsUnavailable(status)) return status;
    const absl::Duration wait = backoff.Next(status);
    const absl::Time now = absl::Now();
    if (now + wait > give_up) return status;
    // Announced before a pause that ends report_every or more after the
    // previous report (or the first attempt).
    if (policy.on_retrying && now + wait - reported >= policy.report_every) {
      policy.on_retrying(status, give_up - now);
      reported = now;
    }
    pause(wait);
  }
}

}  // namespace shard::client
