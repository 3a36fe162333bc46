// How the coordinator answers a call later: a Reply is called exactly once
// with the call's result, never under a lock of the service. A mutation's
// answer goes out through ReplyWhenDurable (write_path.h), so a client
// never hears OK for a change a crash could still lose.
#ifndef SERVER_REPLY_H_
#define SERVER_REPLY_H_

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"

namespace shard::server {

template <typename Response>
using Reply = absl::AnyInvocable<void(absl::StatusOr<Response>) &&>;

}  // namespace shard::server

#endif  // SERVER_REPLY_H_
