#include "shard/client/shard_stream.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/grpc_status.h"
#include "proto/index_chunk_codec.h"

namespace shard::client {

ShardStream::ShardStream(std::shared_ptr<CoordinatorReplicas> replicas,
                         shard::v1::StreamShardRequest request,
                         uint32_t world_size, const StreamOptions& options,
                         const RetryPolicy& retry, bool batched)
    : replicas_(std::move(replicas)),
      request_(std::move(request)),
      world_size_(world_size),
      options_(options),
      retry_(retry),
      batched_(batched),
      reader_([this] { ReadLoop(); }) {}

ShardStream::~ShardStream() {
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    if (active_context_ != nullptr) active_context_->TryCancel();
  }
  reader_.join();
}

void ShardStream::PauseBeforeReconnect(absl::Duration pause) {
  const std::shared_ptr<grpc::Channel> channel = replicas_->Current().channel;
  const bool connected =
      channel->GetState(/*try_to_connect=*/true) == GRPC_CHANNEL_READY;
  const absl::Time until = absl::Now() + pause;
  auto cancelled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return cancelled_;
  };
  // In slices, to notice the reconnection (a restarted coordinator is
  // called as soon as it serves, not after the rest of a backoff).
  while (!cancelled_ && absl::Now() < until) {
    mu_.AwaitWithTimeout(absl::Condition(&cancelled),
                         std::min(until - absl::Now(), absl::Milliseconds(50)));
    if (!connected && channel->GetState(false) == GRPC_CHANNEL_READY) return;
  }
}

void ShardStream::ReadLoop() {
  absl::Time give_up = absl::Now() + retry_.deadline;
  Backoff backoff(retry_);
  absl::Status status;
  while (true) {
    uint64_t received_before;
    {
      absl::MutexLock lock(&mu_);
      received_before = received_;
    }
    status = ReadOnce();
    if (!absl::IsUnavailable(status)) break;
    absl::MutexLock lock(&mu_);
    if (cancelled_) break;
    if (received_ > received_before) {
      // Progress was made: the retry budget starts again.
      backoff.Reset();
      give_up = absl::Now() + retry_.deadline;
    }
    const absl::Duration pause = backoff.Next(status);
    if (absl::Now() + pause > give_up) break;
    PauseBeforeReconnect(pause);
    if (cancelled_) break;
  }
  absl::MutexLock lock(&mu_);
  const uint64_t first = first_offset_.value_or(0);
  const uint64_t expected =
      shard_size_.value_or(0) > first ? *shard_size_ - first : 0;
  if (status.ok() && batched_ && !partial_.empty()) {
    status = absl::DataLossError(
        absl::StrCat("StreamShard ended inside a micro-batch (",
                     partial_.size(), " of its indices received)"));
  } else if (status.ok() && !batched_ && received_ != expected) {
    status = absl::DataLossError(absl::StrCat(
        "StreamShard ended after ", received_, " of ", expected, " indices"));
  }
  error_ = status;
  finished_ = true;
}

absl::Status ShardStream::ReadOnce() {
  grpc::ClientContext context;
  shard::v1::StreamShardRequest request = request_;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_) return absl::CancelledError("stream closed");
    request.set_start_position(ResumePosition());
    // A micro-batch received in part is received again from its step.
    partial_.clear();
    connection_received_ = 0;
    request.set_max_chunk_indices(options_.chunk_indices);
    active_context_ = &context;
  }
  const CoordinatorReplicas::Pick replica = replicas_->Current();
  std::unique_ptr<grpc::ClientReader<shard::v1::IndexChunk>> reader =
      replica.stub->StreamShard(&context, request);
  shard::v1::IndexChunk chunk;
  absl::Status status;
  bool answered = false;
  while (reader->Read(&chunk)) {
    if (!answered) {
      replicas_->Answered(replica, context);
      answered = true;
    }
    absl::MutexLock lock(&mu_);
    status = CheckChunk(chunk);
    if (!status.ok()) {
      context.TryCancel();
      break;
    }
    auto has_room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return cancelled_ || queued_bytes_ < options_.prefetch_bytes;
    };
    mu_.Await(absl::Condition(&has_room));
    if (cancelled_) break;
    Enqueue(std::move(chunk));
    chunk = shard::v1::IndexChunk();
  }
  grpc::Status finish = reader->Finish();
  absl::MutexLock lock(&mu_);
  active_context_ = nullptr;
  if (!status.ok()) return status;
  if (cancelled_) return absl::CancelledError("stream closed");
  // Not cancelled by this stream (cancelled_ is false, status is OK).
  const absl::Status ended =
      ServerCancelledAsUnavailable(FromGrpcStatus(finish, "StreamShard"));
  if (absl::IsUnavailable(ended) && replicas_->Failed(replica, context)) {
    return MarkedRetrySoon(ended);
  }
  return ended;
}

uint64_t ShardStream::ResumePosition() const {
  if (batched_) return received_step_end_.value_or(request_.start_position());
  return request_.start_position() + received_ * world_size_;
}

absl::Status ShardStream::CheckChunk(const shard::v1::IndexChunk& chunk) {
  if (batched_) {
    // Rank offsets count from the connection's start position.
    if (chunk.rank_offset() != connection_received_ ||
        chunk.batch_ends_size() != chunk.step_ends_size() ||
        !wire::ChunkWellFormed(chunk)) {
      return absl::DataLossError(absl::StrCat(
          "StreamShard: malformed balanced-batch chunk at rank offset ",
          chunk.rank_offset(), " after ", connection_received_, " indices"));
    }
    return absl::OkStatus();
  }
  if (!first_offset_) first_offset_ = chunk.rank_offset();
  if (chunk.rank_offset() != *first_offset_ + received_) {
    return absl::DataLossError(absl::StrCat(
        "StreamShard: chunk at rank offset ", chunk.rank_offset(),
        " does not follow the ", received_, " indices already received"));
  }
  if (!wire::ChunkWellFormed(chunk)) {
    return absl::DataLossError(absl::StrCat(
        "StreamShard: malformed chunk (index_width ", chunk.index_width(), ", ",
        chunk.packed_indices().size(), " packed bytes)"));
  }
  return absl::OkStatus();
}

void ShardStream::EnqueueBatches(const shard::v1::IndexChunk& chunk) {
  const size_t count = wire::ChunkIndexCount(chunk);
  std::vector<uint64_t> indices(count);
  wire::CopyChunkIndices(chunk, 0, absl::MakeSpan(indices));
  size_t begin = 0;
  for (int b = 0; b < chunk.batch_ends_size(); ++b) {
    // Checked to lie in the chunk: offsets from rank_offset to its end.
    const size_t end = std::clamp<uint64_t>(
        chunk.batch_ends(b) -
            std::min(chunk.batch_ends(b), chunk.rank_offset()),
        begin, count);
    MicroBatch batch;
    batch.indices = std::move(partial_);
    partial_.clear();
    batch.indices.insert(batch.indices.end(), indices.begin() + begin,
                         indices.begin() + end);
    batch.step_end = chunk.step_ends(b);
    received_step_end_ = batch.step_end;
    queued_bytes_ += batch.indices.size() * sizeof(uint64_t);
    batches_.push_back(std::move(batch));
    begin = end;
  }
  partial_.insert(partial_.end(), indices.begin() + begin, indices.end());
  connection_received_ += count;
  received_ += count;
}

void ShardStream::Enqueue(shard::v1::IndexChunk chunk) {
  if (chunk.epoch_positions() != 0) epoch_positions_ = chunk.epoch_positions();
  if (batched_) return EnqueueBatches(chunk);
  shard_size_ = chunk.rank_shard_size();
  const size_t count = wire::ChunkIndexCount(chunk);
  if (count == 0) return;
  received_ += count;
  queued_indices_ += count;
  queued_bytes_ += wire::ChunkPayloadBytes(chunk);
  queue_.push_back(std::move(chunk));
}

absl::StatusOr<std::optional<MicroBatch>> ShardStream::NextBatch() {
  if (!batched_) {
    return absl::FailedPreconditionError(
        "NextBatch() is for jobs with balanced batches: use Next()");
  }
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return !batches_.empty() || finished_;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&ready), options_.stall_timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("StreamShard: no micro-batch arrived for ",
                     absl::FormatDuration(options_.stall_timeout)));
  }
  if (batches_.empty()) {
    if (!error_.ok()) return error_;
    end_reported_ = true;
    return std::nullopt;
  }
  MicroBatch batch = std::move(batches_.front());
  batches_.pop_front();
  queued_bytes_ -= batch.indices.size() * sizeof(uint64_t);
  consumed_step_end_ = batch.step_end;
  return batch;
}

absl::StatusOr<size_t> ShardStream::Next(absl::Span<uint64_t> out) {
  if (batched_) {
    return absl::FailedPreconditionError(
        "the job has balanced batches: read them with NextBatch()");
  }
  absl::MutexLock lock(&mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return queued_indices_ > 0 || finished_;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&ready), options_.stall_timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("StreamShard: no indices arrived for ",
                     absl::FormatDuration(options_.stall_timeout)));
  }
  size_t copied = 0;
  while (copied < out.size() && !queue_.empty()) {
    const shard::v1::IndexChunk& front = queue_.front();
    const size_t front_count = wire::ChunkIndexCount(front);
    const size_t take =
        std::min<size_t>(out.size() - copied, front_count - front_offset_);
    wire::CopyChunkIndices(front, front_offset_, out.subspan(copied, take));
    copied += take;
    front_offset_ += take;
    queued_indices_ -= take;
    if (front_offset_ == front_count) {
      queued_bytes_ -= wire::ChunkPayloadBytes(front);
      queue_.pop_front();
      front_offset_ = 0;
    }
  }
  consumed_ += copied;
  if (copied == 0 && finished_ && !error_.ok()) return error_;
  if (copied == 0 && out.size() > 0 && finished_) end_reported_ = true;
  return copied;
}

std::optional<uint64_t> ShardStream::rank_shard_size() const {
  absl::MutexLock lock(&mu_);
  return shard_size_;
}

uint64_t ShardStream::position() const {
  absl::MutexLock lock(&mu_);
  if (end_reported_ && epoch_positions_) return *epoch_positions_;
  if (batched_) return consumed_step_end_.value_or(request_.start_position());
  return request_.start_position() + consumed_ * world_size_;
}

}  // namespace shard::client
