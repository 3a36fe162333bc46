// shardctl health: the gRPC health of every coordinator address given,
// like `etcdctl endpoint health`.
#ifndef CLIENT_SHARDCTL_HEALTH_COMMAND_H_
#define CLIENT_SHARDCTL_HEALTH_COMMAND_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "shard/client/coordinator_client.h"

namespace shard::shardctl {

// health [--service NAME]: checks each address of `options.address` (a
// replica list: every replica) with grpc.health.v1.Health/Check of
// `service` ("" by default: the whole server, SERVING on a single
// coordinator or the replicas' leader; "liveness": SERVING on every
// running replica), each within options.rpc_timeout, and prints one line
// per address:
//   127.0.0.1:7070 is healthy: SERVING (took 1.4ms)
//   127.0.0.1:7071 is unhealthy: NOT_SERVING (took 0.9ms)
//   127.0.0.1:7072 is unhealthy: UNAVAILABLE: failed to connect ...
// OK when every address is SERVING; UNAVAILABLE ("1 of 3 endpoints
// unhealthy") otherwise; INVALID_ARGUMENT for bad flags, security files or
// addresses (see ParseCoordinatorAddresses).
absl::Status Health(const client::ClientOptions& options,
                    const std::vector<std::string>& args);

}  // namespace shard::shardctl

#endif  // CLIENT_SHARDCTL_HEALTH_COMMAND_H_
