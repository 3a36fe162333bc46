#include "server/rpc/shard_stream_reactor.h"

#include <utility>

#include "proto/index_chunk_codec.h"
#include "server/rpc/grpc_status.h"

namespace shard::server {

ShardStreamReactor* ShardStreamReactor::Refuse(const grpc::Status& status) {
  auto* reactor = new ShardStreamReactor(nullptr);
  reactor->Finish(status);
  return reactor;
}

ShardStreamReactor* ShardStreamReactor::Serve(
    ServingSlot::Claim claim, const ServingSlot* slot,
    grpc::CallbackServerContext* context,
    const shard::v1::StreamShardRequest& request, const StreamHooks* hooks,
    std::function<absl::Status()> still_allowed) {
  auto* reactor = new ShardStreamReactor(hooks);
  if (hooks->active_changed) hooks->active_changed(+1);
  reactor->slot_ = slot;
  reactor->still_allowed_ = std::move(still_allowed);
  reactor->context_ = context;
  reactor->term_ = claim.term;
  reactor->opening_on_ = std::move(claim.service);
  reactor->opening_ = std::make_shared<Opening>();
  {
    absl::MutexLock lock(&reactor->opening_->mu);
    reactor->opening_->reactor = reactor;
  }
  // A copy: the reply may run (and release opening_on_) within the call.
  const std::shared_ptr<CoordinatorService> service = reactor->opening_on_;
  service->shards().StartOpenShard(
      request,
      [opening = reactor->opening_](absl::StatusOr<ShardCursor> cursor) {
        ShardStreamReactor* reactor = opening->Take();
        if (reactor == nullptr) return;  // Cancelled and finished meanwhile.
        reactor->Opened(std::move(cursor));
      });
  return reactor;
}

void ShardStreamReactor::Opened(absl::StatusOr<ShardCursor> cursor) {
  opening_on_.reset();
  if (!cursor.ok()) return FinishFailed(cursor.status());
  cursor_.emplace(*std::move(cursor));
  WriteNext();
}

void ShardStreamReactor::FinishFailed(const absl::Status& error) {
  // A failure because the service was taken out meanwhile (RESOURCE_EXHAUSTED
  // of a drained order wait, an abandoned shuffle) answers the refusal.
  absl::Status refused = slot_->StillServes(term_);
  if (refused.ok()) refused = error;
  AddRefusalTrailers(context_, refused);
  Finish(ToGrpcStatus(refused));
}

void ShardStreamReactor::OnDone() {
  if (hooks_ != nullptr && hooks_->active_changed) hooks_->active_changed(-1);
  delete this;
}

void ShardStreamReactor::OnCancel() {
  // Only while opening: once streaming, the failed write finishes the call.
  if (opening_ != nullptr && opening_->Take() != nullptr) {
    Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                        "client went away while the shard was opening"));
  }
}

void ShardStreamReactor::WriteNext() {
  if (absl::Status refused = slot_->StillServes(term_); !refused.ok()) {
    return FinishFailed(refused);
  }
  if (absl::Status denied = still_allowed_(); !denied.ok()) {
    return FinishFailed(denied);
  }
  if (std::optional<uint64_t> entry = cursor_->Awaits()) {
    // The order is still being shuffled: the shuffle's thread resumes the
    // stream once the chunk's entries are final.
    cursor_->order().progress()->WhenFinal(*entry, [this](absl::Status built) {
      if (!built.ok()) return FinishFailed(built);
      WriteNext();
    });
    return;
  }
  if (!cursor_->Next(&chunk_)) {
    Finish(ToGrpcStatus(cursor_->status()));
    return;
  }
  StartWrite(&chunk_);
}

void ShardStreamReactor::OnWriteDone(bool ok) {
  if (!ok) {
    Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                        "client went away during the stream"));
    return;
  }
  cursor_->Delivered();
  if (hooks_->indices_streamed) {
    hooks_->indices_streamed(wire::ChunkIndexCount(chunk_));
  }
  WriteNext();
}

}  // namespace shard::server
