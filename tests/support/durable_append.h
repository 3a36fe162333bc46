// Blocking forms of the journal's asynchronous durability, for tests: the
// coordinator itself never waits (it answers from StateLog::WhenDurable).
#ifndef TESTS_SUPPORT_DURABLE_APPEND_H_
#define TESTS_SUPPORT_DURABLE_APPEND_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "server/storage/state_store.h"
#include "shard/state/v1/updates.pb.h"

namespace shard::testing {

// Blocks until every record up to `sequence` is durable: OK, or the log's
// UNAVAILABLE error if it broke first.
inline absl::Status AwaitDurable(storage::StateStore& log, uint64_t sequence) {
  absl::Notification decided;
  absl::Status result;
  log.WhenDurable(sequence, [&](absl::Status status) {
    result = status;
    decided.Notify();
  });
  decided.WaitForNotification();
  return result;
}

// Queues `update` and blocks until it is durable.
inline absl::Status AppendDurably(storage::StateStore& log,
                                  const shard::state::v1::StateUpdate& update) {
  absl::StatusOr<uint64_t> sequence = log.Enqueue(update);
  if (!sequence.ok()) return sequence.status();
  return AwaitDurable(log, *sequence);
}

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_DURABLE_APPEND_H_
