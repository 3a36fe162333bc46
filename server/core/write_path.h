// The coordinator's write path: its state in memory and the journal behind
// it. Persist() checks an update against the state, applies it and queues
// it in the journal (group commit, never waiting for the disk); the call
// that made the change answers through ReplyWhenDurable (below) with
// journaled() taken before it let go of the lock. CheckServing() refuses
// every call while draining and once the journal broke: from then on the
// state in memory may be ahead of the disk, so nothing of it is shown.
//
// Not thread-safe: the owner calls it under its own lock. Owns neither the
// log (thread-safe; the owner keeps it to reply) nor anything else.
#ifndef SERVER_CORE_WRITE_PATH_H_
#define SERVER_CORE_WRITE_PATH_H_

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/state/coordinator_state.h"
#include "server/storage/state_store.h"
#include "server/waiting/reply.h"
#include "shard/state/v1/updates.pb.h"

namespace shard::server {

class WritePath {
 public:
  WritePath(CoordinatorState state, storage::StateStore* log)
      : state_(std::move(state)), log_(log) {}

  const CoordinatorState& state() const { return state_; }

  // UNAVAILABLE while draining or once the journal broke.
  absl::Status CheckServing() const;
  // From now on CheckServing() refuses.
  void Drain() { draining_ = true; }

  // Applies `update` if it fits the state (CoordinatorState::Check: its
  // error, FAILED_PRECONDITION or INVALID_ARGUMENT, and nothing changed
  // otherwise), queues it in the journal and, when one is due, a snapshot.
  // UNAVAILABLE if the journal is broken: the update stays applied in
  // memory but is never observed, CheckServing() refusing every call.
  absl::Status Persist(const shard::state::v1::StateUpdate& update);
  // The sequence of the last record queued: what a reply must wait for.
  uint64_t journaled() const { return log_->last_sequence(); }

 private:
  CoordinatorState state_;
  storage::StateStore* const log_;
  bool draining_ = false;
};

// Answers `reply` with `answer` once every record up to `journaled` is
// durable in `log` (see StateStore::WhenDurable: at once if it already is,
// else on the log's writer thread), or with the log's error if it broke
// first. An error answer goes out at once: it promises nothing. Never
// blocks; call it without holding locks.
template <typename Response>
void ReplyWhenDurable(storage::StateStore& log, uint64_t journaled,
                      Reply<Response> reply, absl::StatusOr<Response> answer) {
  if (!answer.ok()) return std::move(reply)(std::move(answer));
  log.WhenDurable(journaled,
                  [reply = std::move(reply),
                   answer = std::move(answer)](absl::Status durable) mutable {
                    if (!durable.ok()) answer = durable;
                    std::move(reply)(std::move(answer));
                  });
}

}  // namespace shard::server

#endif  // SERVER_CORE_WRITE_PATH_H_
