// One rank's indices of one epoch, streamed from the coordinator with a
// bounded prefetch window.
//
// A background thread reads chunks of the StreamShard RPC into a queue that
// holds at most about `prefetch_bytes` of index payload (so memory does not
// grow with the dataset size) and reconnects on UNAVAILABLE from the first
// index not yet received (on the replica that leads, see
// CoordinatorReplicas), with backoff, until the retry deadline. Any other
// error ends the stream and is returned by Next(). A job with balanced
// batches (JobSpec.batches) is read with NextBatch() instead: whole
// micro-batches, one per step, and a reconnection resumes at the end of the
// last step received whole. Thread-safety: Next(), NextBatch() and
// the accessors may be called from one consumer thread at a time; destruction
// cancels the RPC and joins the reader thread.
#ifndef SHARD_CLIENT_SHARD_STREAM_H_
#define SHARD_CLIENT_SHARD_STREAM_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "grpcpp/client_context.h"
#include "shard/client/coordinator_replicas.h"
#include "shard/client/retry.h"
#include "shard/v1/shard.grpc.pb.h"

namespace shard::client {

struct StreamOptions {
  // Index payload buffered ahead of the consumer, in bytes (4 per index for
  // jobs below 2^32 samples, else 8). The reader stops reading while the
  // queue holds this much, so one chunk may overshoot it.
  size_t prefetch_bytes = size_t{1} << 20;
  // Indices per chunk asked of the coordinator; 0 = coordinator default.
  uint32_t chunk_indices = 0;
  // Next() gives up with DEADLINE_EXCEEDED if no data arrives for this long.
  absl::Duration stall_timeout = absl::Minutes(10);
};

// One micro-batch of a job with balanced batches: this rank's indices of
// one step, and the epoch's position at the end of that step (what a
// commit after the step names).
struct MicroBatch {
  std::vector<uint64_t> indices;
  uint64_t step_end = 0;
};

class ShardStream {
 public:
  // Starts streaming `request`; `world_size` converts received counts back
  // to global positions when reconnecting. `batched`: the job has balanced
  // batches (read them with NextBatch()).
  ShardStream(std::shared_ptr<CoordinatorReplicas> replicas,
              shard::v1::StreamShardRequest request, uint32_t world_size,
              const StreamOptions& options, const RetryPolicy& retry,
              bool batched = false);
  ~ShardStream();
  ShardStream(const ShardStream&) = delete;
  ShardStream& operator=(const ShardStream&) = delete;

  // Copies the next indices into `out` (up to out.size()) and returns how
  // many; 0 only at the end of the shard. Blocks while the window is empty.
  absl::StatusOr<size_t> Next(absl::Span<uint64_t> out)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Balanced batches: the next micro-batch, nullopt at the end of the
  // epoch. Blocks while none is buffered. FAILED_PRECONDITION for a job
  // without balanced batches (and Next() for one with them).
  absl::StatusOr<std::optional<MicroBatch>> NextBatch()
      ABSL_LOCKS_EXCLUDED(mu_);

  // Indices this rank has in the epoch, once the first chunk arrived (0
  // for balanced batches: not known in advance).
  std::optional<uint64_t> rank_shard_size() const ABSL_LOCKS_EXCLUDED(mu_);

  // Global position the next index belongs to, counted in whole rounds:
  // start_position + W * (indices handed out by Next); once Next() handed
  // out the whole shard and reported its end, the epoch's length (a rank
  // holding fewer indices of an uneven epoch is done too), so a finished
  // epoch commits as complete from any rank. Balanced batches: the end of
  // the step of the last micro-batch NextBatch() handed out (the start
  // before the first; the epoch's length after the end).
  uint64_t position() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void ReadLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Runs one StreamShard call from the first index not yet received; returns
  // its final status.
  absl::Status ReadOnce() ABSL_LOCKS_EXCLUDED(mu_);
  // Waits `pause` before a reconnect, less once cancelled or once the
  // coordinator, not connected at the start, is connected again.
  void PauseBeforeReconnect(absl::Duration pause)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // DATA_LOSS for a chunk that does not follow what was received or is
  // malformed; notes the first chunk's offset.
  absl::Status CheckChunk(const shard::v1::IndexChunk& chunk)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues a checked chunk for Next() and counts it as received.
  void Enqueue(shard::v1::IndexChunk chunk) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Balanced batches: queues the micro-batches a checked chunk completes,
  // keeping the rest of it for the next chunk.
  void EnqueueBatches(const shard::v1::IndexChunk& chunk)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Where a (re)connection starts.
  uint64_t ResumePosition() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<CoordinatorReplicas> replicas_;
  const shard::v1::StreamShardRequest request_;
  const uint32_t world_size_;
  const StreamOptions options_;
  const RetryPolicy retry_;
  const bool batched_;

  mutable absl::Mutex mu_;
  std::deque<shard::v1::IndexChunk> queue_ ABSL_GUARDED_BY(mu_);
  size_t queued_indices_ ABSL_GUARDED_BY(mu_) = 0;
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  // Read position (in indices) inside queue_.front().
  size_t front_offset_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t received_ ABSL_GUARDED_BY(mu_) = 0;  // Rank indices received.
  uint64_t consumed_ ABSL_GUARDED_BY(mu_) = 0;  // Rank indices handed out.
  std::optional<uint64_t> shard_size_ ABSL_GUARDED_BY(mu_);
  // The epoch's length in positions (IndexChunk.epoch_positions).
  std::optional<uint64_t> epoch_positions_ ABSL_GUARDED_BY(mu_);
  bool end_reported_ ABSL_GUARDED_BY(mu_) = false;  // Next() returned 0.
  // Rank offset of the first chunk of the first call.
  std::optional<uint64_t> first_offset_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // Reader thread is done.
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // Balanced batches: whole micro-batches not handed out yet, the indices
  // of one received in part, the indices received on the current
  // connection, and the step end of the last one received and handed out.
  std::deque<MicroBatch> batches_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> partial_ ABSL_GUARDED_BY(mu_);
  uint64_t connection_received_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<uint64_t> received_step_end_ ABSL_GUARDED_BY(mu_);
  std::optional<uint64_t> consumed_step_end_ ABSL_GUARDED_BY(mu_);
  grpc::ClientContext* active_context_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::thread reader_;
};

}  // namespace shard::client

#endif  // SHARD_CLIENT_SHARD_STREAM_H_
