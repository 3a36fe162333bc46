// absl::Status -> grpc::Status for the server's gRPC glue.
#ifndef SERVER_RPC_GRPC_STATUS_H_
#define SERVER_RPC_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/status.h"

namespace shard::server {

// The same code and message (absl and gRPC share the canonical codes).
grpc::Status ToGrpcStatus(const absl::Status& status);

// A replica's refusal (common/leader_hint.h): its kLeaderMetadataKey and
// kStandbyMetadataKey payloads, when present, become the call's trailers.
// Call before the call finishes.
void AddRefusalTrailers(grpc::ServerContextBase* context,
                        const absl::Status& refused);

}  // namespace shard::server

#endif  // SERVER_RPC_GRPC_STATUS_H_
