#include "server/shard_stream_reactor.h"

#include <utility>

#include "proto/index_chunk_codec.h"
#include "server/grpc_coordinator.h"

namespace shard::server {

ShardStreamReactor* ShardStreamReactor::Refuse(const grpc::Status& status) {
  auto* reactor = new ShardStreamReactor(nullptr);
  reactor->Finish(status);
  return reactor;
}

ShardStreamReactor* ShardStreamReactor::Serve(
    CoordinatorService* service, WorkPool* pool,
    const shard::v1::StreamShardRequest& request, absl::Time deadline,
    const std::function<void(uint64_t)>* on_indices_streamed) {
  auto* reactor = new ShardStreamReactor(on_indices_streamed);
  pool->Schedule([reactor, service, request, deadline] {
    absl::StatusOr<ShardCursor> cursor = service->OpenShard(request, deadline);
    if (!cursor.ok()) {
      reactor->Finish(ToGrpcStatus(cursor.status()));
      return;
    }
    reactor->cursor_.emplace(*std::move(cursor));
    reactor->WriteNext();
  });
  return reactor;
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
  if (on_indices_streamed_ != nullptr && *on_indices_streamed_) {
    (*on_indices_streamed_)(wire::ChunkIndexCount(chunk_));
  }
  WriteNext();
}

}  // namespace shard::server
