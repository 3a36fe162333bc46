// grpc::Status -> absl::Status with the same code and message, and the
// clients' reading of a call they did not cancel themselves.
#ifndef CLIENT_GRPC_STATUS_H_
#define CLIENT_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/status.h"

namespace shard::client {

// `what` names the call, e.g. "JoinJob", and prefixes the message.
absl::Status FromGrpcStatus(const grpc::Status& status, absl::string_view what);

// For a call this client did not cancel: CANCELLED can then only come from
// a coordinator process that stops (gRPC's server cancels the calls that
// reach it once its shutdown began; a replica's change of role cancels
// nothing), so it is returned as UNAVAILABLE (retried, and the replica
// reported failed) with the message saying so. Any other status is
// returned as is.
absl::Status ServerCancelledAsUnavailable(absl::Status status);

}  // namespace shard::client

#endif  // CLIENT_GRPC_STATUS_H_
