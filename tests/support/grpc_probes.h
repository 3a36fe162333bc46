// Clients of gRPC's standard health and reflection services for tests,
// over generic stubs (the Debian gRPC packages ship the services but not
// their client stubs). The few protobuf fields used are encoded by hand.
#ifndef TESTS_SUPPORT_GRPC_PROBES_H_
#define TESTS_SUPPORT_GRPC_PROBES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/channel.h"

namespace shard::testing {

enum class Health { kUnknown = 0, kServing = 1, kNotServing = 2 };

// Checks `service` ("" = the whole server). The call's error (e.g.
// NOT_FOUND for an unknown service, UNAVAILABLE) as a status.
absl::StatusOr<Health> CheckHealth(
    const std::shared_ptr<grpc::Channel>& channel, const std::string& service);

// The raw ServerReflectionResponse to a list_services request (it holds
// the service names as strings).
absl::StatusOr<std::string> ListServicesRaw(
    const std::shared_ptr<grpc::Channel>& channel);

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_GRPC_PROBES_H_
