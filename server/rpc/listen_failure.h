// Why a listening address cannot be bound. gRPC reports only that a port
// could not be added; ListenFailure binds the same address itself to learn
// the cause, so that shardd's message sends the operator to the right place.
// Stateless; thread-safe.
#ifndef SERVER_RPC_LISTEN_FAILURE_H_
#define SERVER_RPC_LISTEN_FAILURE_H_

#include <string>

namespace shard::server {

// The cause for `listen` ("HOST:PORT" or "[V6]:PORT"), e.g. "address
// already in use", "permission denied (...)", "not an address of this
// host", "HOST does not resolve (...)", "expected HOST:PORT".
std::string ListenFailure(const std::string& listen);

}  // namespace shard::server

#endif  // SERVER_RPC_LISTEN_FAILURE_H_
