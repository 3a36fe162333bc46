// Serves one StreamShard call on gRPC's callback API: no thread is held per
// stream. Opening the shard waits for the epoch order without a thread
// (ShardService::StartOpenShard); after that each chunk is produced
// in OnWriteDone of the previous one, so a stream costs only its cursor and
// one chunk buffer, and a slow reader simply receives its next chunk later
// (HTTP/2 flow control). While the order is still being shuffled, a chunk
// whose entries are not final yet is written by the shuffle's thread once
// they are (OrderProgress::WhenFinal), again without a thread waiting. A
// client that goes away while the shard is opening gets its call finished
// at once; one that goes away while a chunk waits for the shuffle, when
// that chunk's write fails (the shuffle reaches it within its build time,
// or is abandoned, which finishes the call). Before each chunk the
// stream checks that the term of the ServingSlot it opened in still serves;
// when it does not (the coordinator drains, the replica stopped leading)
// it ends with the refusal, UNAVAILABLE, and the client resumes elsewhere.
// It also asks `still_allowed` (the caller's authorization, re-checked
// against a policy reloaded meanwhile) and ends with its denial, e.g.
// PERMISSION_DENIED for a principal revoked while it streams.
//
// Lifetime: created with new by the service method, deletes itself in
// OnDone(). Finish() is called exactly once. Holds the service it is served
// by until the shard is open (the cursor holds its order); the slot, the
// context and the hooks must outlive every reactor (the server is shut down
// first).
#ifndef SERVER_RPC_SHARD_STREAM_REACTOR_H_
#define SERVER_RPC_SHARD_STREAM_REACTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "server/plans/shard_cursor.h"
#include "server/rpc/serving_slot.h"
#include "server/services/coordinator_service.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

// Stream events, for metrics; unset hooks are skipped. Called on gRPC's
// or the order cache's threads: keep them cheap and thread-safe.
struct StreamHooks {
  // The size of every chunk a stream delivered.
  std::function<void(uint64_t)> indices_streamed;
  // +1 when a stream starts, -1 when it ends.
  std::function<void(int)> active_changed;
};

class ShardStreamReactor
    : public grpc::ServerWriteReactor<shard::v1::IndexChunk> {
 public:
  // A reactor that answers `status` at once (e.g. UNAUTHENTICATED).
  static ShardStreamReactor* Refuse(const grpc::Status& status);
  // Opens the shard on the claimed service, then streams it while the
  // claim's term serves in `slot`.
  // `still_allowed` runs before each chunk, one call at a time.
  static ShardStreamReactor* Serve(ServingSlot::Claim claim,
                                   const ServingSlot* slot,
                                   grpc::CallbackServerContext* context,
                                   const shard::v1::StreamShardRequest& request,
                                   const StreamHooks* hooks,
                                   std::function<absl::Status()> still_allowed);

  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  explicit ShardStreamReactor(const StreamHooks* hooks) : hooks_(hooks) {}
  // The open's reply: streams from `cursor`, or finishes with its error.
  void Opened(absl::StatusOr<ShardCursor> cursor);
  // Writes the next chunk (or waits for the shuffle to make it final),
  // finishes with OK at the end of the shard, or with the refusal once the
  // term no longer serves.
  void WriteNext();
  // Finishes with `error`, or with the refusal if the term no longer serves.
  void FinishFailed(const absl::Status& error);

  // While the shard is opening, the reactor; taken (set to null) by
  // whichever comes first: the open's reply or OnCancel. Shared with the
  // pending reply, which may outlive the reactor.
  struct Opening {
    absl::Mutex mu;
    ShardStreamReactor* reactor ABSL_GUARDED_BY(mu) = nullptr;
    ShardStreamReactor* Take() ABSL_LOCKS_EXCLUDED(mu) {
      absl::MutexLock lock(&mu);
      return std::exchange(reactor, nullptr);
    }
  };

  const StreamHooks* hooks_;  // Null for a refused call.
  const ServingSlot* slot_ = nullptr;
  std::function<absl::Status()> still_allowed_;
  grpc::CallbackServerContext* context_ = nullptr;
  uint64_t term_ = 0;
  // The service the shard opens on; released once it is open.
  std::shared_ptr<CoordinatorService> opening_on_;
  std::shared_ptr<Opening> opening_;
  std::optional<ShardCursor> cursor_;
  shard::v1::IndexChunk chunk_;
};

}  // namespace shard::server

#endif  // SERVER_RPC_SHARD_STREAM_REACTOR_H_
