// grpc::Status -> absl::Status with the same code and message.
#ifndef CLIENT_GRPC_STATUS_H_
#define CLIENT_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/status.h"

namespace shard::client {

// `what` names the call, e.g. "JoinJob", and prefixes the message.
absl::Status FromGrpcStatus(const grpc::Status& status, absl::string_view what);

}  // namespace shard::client

#endif  // CLIENT_GRPC_STATUS_H_
