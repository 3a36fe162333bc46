// Clients of gRPC's standard health and reflection services for tests,
// over generic stubs (the Debian gRPC packages ship the services but not
// their client stubs): health through the client library's CheckHealth
// (client/health_check.h), reflection with its few fields encoded here.
#ifndef TESTS_SUPPORT_GRPC_PROBES_H_
#define TESTS_SUPPORT_GRPC_PROBES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "client/health_check.h"
#include "grpcpp/channel.h"

namespace shard::testing {

using Health = client::ServingStatus;

// client::CheckHealth with a 5 s deadline.
absl::StatusOr<Health> CheckHealth(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& service);

// The raw ServerReflectionResponse to a list_services request (it holds
// the service names as strings).
absl::StatusOr<std::string> ListServicesRaw(
    const std::shared_ptr<grpc::Channel>& channel);

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_GRPC_PROBES_H_
