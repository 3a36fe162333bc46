// Sends a replicated coordinator's leader lease with every answer, as the
// initial metadata kLeaderLeaseMetadataKey (common/leader_hint.h), so that
// clients size the keepalive of their open calls to it.
//
// Thread-safety: the factory is immutable and shared by gRPC's threads;
// each interceptor belongs to one call.
#ifndef SERVER_RPC_LEASE_ADVERT_H_
#define SERVER_RPC_LEASE_ADVERT_H_

#include <memory>

#include "absl/time/time.h"
#include "grpcpp/support/server_interceptor.h"

namespace shard::server {

// `lease` must be positive.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewLeaseAdvertFactory(absl::Duration lease);

}  // namespace shard::server

#endif  // SERVER_RPC_LEASE_ADVERT_H_
