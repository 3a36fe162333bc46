// Retrying calls that failed with UNAVAILABLE, with capped exponential
// backoff and jitter, up to an overall deadline.
#ifndef SHARD_CLIENT_RETRY_H_
#define SHARD_CLIENT_RETRY_H_

#include <functional>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/time/time.h"

namespace shard::client {

struct RetryPolicy {
  // First pause after an UNAVAILABLE answer.
  absl::Duration initial_backoff = absl::Milliseconds(100);
  // Pauses double up to this.
  absl::Duration max_backoff = absl::Seconds(5);
  // No new attempt starts after this much time since the first one.
  absl::Duration deadline = absl::Seconds(60);
  // While retrying, called before each pause that ends `report_every` or
  // more after the previous call (or the first attempt): so every wait of
  // that length is announced and a quick recovery stays silent. Gets the
  // last UNAVAILABLE status and the time left before giving up; runs on
  // the retrying thread. Empty: silent. The CLIs print it.
  std::function<void(const absl::Status& last, absl::Duration left)>
      on_retrying;
  absl::Duration report_every = absl::Seconds(5);
};

// Runs `attempt` until it returns anything but UNAVAILABLE or the policy's
// deadline passes; returns the last status. Sleeps between attempts (each
// pause is a random 50..100% of the current backoff) and reports through
// policy.on_retrying. Thread-safe.
absl::Status RetryUnavailable(const RetryPolicy& policy,
                              absl::FunctionRef<absl::Status()> attempt);

// Exponential backoff state shared by RetryUnavailable and the stream
// reconnect loop. Not thread-safe.
class Backoff {
 public:
  explicit Backoff(const RetryPolicy& policy);
  // The pause before the next attempt; grows the backoff for the one after.
  absl::Duration Next();
  void Reset();

 private:
  RetryPolicy policy_;
  absl::Duration current_;
};

}  // namespace shard::client

#endif  // SHARD_CLIENT_RETRY_H_
