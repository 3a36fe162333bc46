// gRPC's standard health check (grpc.health.v1.Health/Check) over a
// generic stub: Debian's gRPC packages ship the service but not its client
// stubs, and linking generated stubs next to a user's own copy would
// register the same proto file twice. The two messages have one field
// each, encoded here by hand. Used by `shardctl health` and the tests.
// Stateless; thread-safe.
#ifndef CLIENT_HEALTH_CHECK_H_
#define CLIENT_HEALTH_CHECK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"

namespace shard::client {

// HealthCheckResponse.ServingStatus.
enum class ServingStatus {
  kUnknown = 0,
  kServing = 1,
  kNotServing = 2,
  kServiceUnknown = 3,
};

// "SERVING", "NOT_SERVING", ...
absl::string_view ServingStatusName(ServingStatus status);

// The status of `service` ("" = the whole server) within `timeout`. The
// call's own error (NOT_FOUND for a service the server does not know,
// UNAVAILABLE, DEADLINE_EXCEEDED, ...) as a status; INTERNAL for a
// response that is not a HealthCheckResponse.
absl::StatusOr<ServingStatus> CheckHealth(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& service,
    absl::Duration timeout);

}  // namespace shard::client

#endif  // CLIENT_HEALTH_CHECK_H_
