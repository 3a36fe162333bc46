// Where the coordinator's state updates become durable. The coordinator
// checks and applies each accepted update in memory, queues it here
// (Enqueue: cheap, called under the coordinator's lock, never waiting for
// I/O) and answers the call once the update is durable (WhenDurable). The
// local journal (StateLog, `shardd --data-dir`) is the implementation
// today; a replicated store implements the same contract.
//
// Contract for implementations: sequences are consecutive from the
// recovered state's; an update is durable only if every earlier one is;
// once broken() is not OK, Enqueue refuses and every pending WhenDurable
// callback gets that error (the state in memory may then be ahead of what
// is durable, so the coordinator refuses every call). Thread-safe.
#ifndef SERVER_STORAGE_STATE_STORE_H_
#define SERVER_STORAGE_STATE_STORE_H_

#include <cstdint>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/state/coordinator_state.h"
#include "shard/state/v1/updates.pb.h"

namespace shard::storage {

class StateStore {
 public:
  // What WhenDurable() runs: OK, or the UNAVAILABLE error of a store that
  // broke before the update was durable.
  using Durable = absl::AnyInvocable<void(absl::Status) &&>;

  virtual ~StateStore() = default;

  // Queues the update and returns its sequence; UNAVAILABLE once broken.
  virtual absl::StatusOr<uint64_t> Enqueue(
      const shard::state::v1::StateUpdate& update) = 0;
  // Runs `done` exactly once, when every update up to `sequence` is durable
  // or the store broke first: at once on the calling thread if that is
  // already decided, else on a thread of the store. `done` must be quick
  // and must not call back into the store; call this without holding a
  // lock that `done` takes.
  virtual void WhenDurable(uint64_t sequence, Durable done) = 0;
  // Lets the store keep a snapshot of `state` when one is due (bounding
  // recovery). `state` includes every queued update: the caller holds the
  // lock it applies them under.
  virtual void MaybeSnapshot(const server::CoordinatorState& state) = 0;
  // Sequence of the last queued update.
  virtual uint64_t last_sequence() const = 0;
  // OK, or why the store stopped accepting updates.
  virtual absl::Status broken() const = 0;
};

}  // namespace shard::storage

#endif  // SERVER_STORAGE_STATE_STORE_H_
