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
  // The pause (a random 50..100% of it) after an UNAVAILABLE marked to be
  // retried soon (MarkedRetrySoon: a standby replica answered, so it is up
  // and names the leader or awaits one; or a replica did not answer and
  // the list has another to try): the backoff does not grow, and a
  // failover costs the client no more than the election plus this.
  absl::Duration soon_pace = absl::Milliseconds(100);
};

// `status` (an UNAVAILABLE) marked to be retried after soon_pace, and the
// test for the mark.
absl::Status MarkedRetrySoon(absl::Status status);
bool IsRetrySoon(const absl::Status& status);

// Runs `attempt` until it returns anything but UNAVAILABLE or the policy's
// deadline passes; returns the last status. Pauses between attempts with
// `pause` (each a random 50..100% of the current backoff, or of soon_pace
// after a status marked to be retried soon; `pause` may return sooner,
// e.g. once the coordinator is reachable again) and reports through
// policy.on_retrying. Thread-safe.
absl::Status RetryUnavailable(
    const RetryPolicy& policy, absl::FunctionRef<absl::Status()> attempt,
    absl::FunctionRef<void(absl::Duration)> pause = absl::SleepFor);

// Exponential backoff state shared by RetryUnavailable and the stream
// reconnect loop. Not thread-safe.
class Backoff {
 public:
  explicit Backoff(const RetryPolicy& policy);
  // The pause before the next attempt after `last`: soon_pace if it is
  // marked to be retried soon, else the backoff, which grows for the one
  // after.
  absl::Duration Next(const absl::Status& last);
  void Reset();

 private:
  RetryPolicy policy_;
  absl::Duration current_;
};

}  // namespace shard::client

#endif  // SHARD_CLIENT_RETRY_H_
