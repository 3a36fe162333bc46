#include "server/shard_stream_reactor.h"

#include <utility>

#include "proto/index_chunk_codec.h"
#include "server/grpc_status.h"

namespace shard::server {

ShardStreamReactor* ShardStreamReactor::Refuse(const grpc::Status& status) {
  auto* reactor = new ShardStreamReactor(nullptr);
  reactor->Finish(status);
  return reactor;
}

ShardStreamReactor* ShardStreamReactor::Serve(
    CoordinatorService* service, const shard::v1::StreamShardRequest& request,
    const StreamHooks* hooks) {
  auto* reactor = new ShardStreamReactor(hooks);
  if (hooks->active_changed) hooks->active_changed(+1);
  reactor->opening_ = std::make_shared<Opening>();
  {
    absl::MutexLock lock(&reactor->opening_->mu);
    reactor->opening_->reactor = reactor;
  }
  service->StartOpenShard(request, [opening = reactor->opening_](
                                       absl::StatusOr<ShardCursor> cursor) {
    ShardStreamReactor* reactor = opening->Take();
    if (reactor == nullptr) return;  // Cancelled and finished meanwhile.
    if (!cursor.ok()) {
      reactor->Finish(ToGrpcStatus(cursor.status()));
      return;
    }
    reactor->cursor_.emplace(*std::move(cursor));
    reactor->WriteNext();
  });
  return reactor;
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
  if (!cursor_->Next(&chunk_)) {
    Finish(grpc::Status::OK);
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
  if (hooks_->indices_streamed) {
    hooks_->indices_streamed(wire::ChunkIndexCount(chunk_));
  }
  WriteNext();
}

}  // namespace shard::server
