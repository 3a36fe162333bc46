// The gRPC channel every client of shardd uses (library, shardctl,
// shard-train): plaintext, TLS (--tls-ca) or mutual TLS (--tls-cert,
// --tls-key), and an optional bearer token (--auth-token-file) that an
// interceptor adds to every call as "authorization: Bearer <token>".
// Stateless; the returned channel is thread-safe.
#ifndef SHARD_CLIENT_COORDINATOR_CHANNEL_H_
#define SHARD_CLIENT_COORDINATOR_CHANNEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"

namespace shard::client {

struct ChannelSecurity {
  // PEM CA bundle that signed the coordinator's certificate; TLS when set.
  std::string tls_ca_file;
  // PEM client certificate (chain) and its key, for mutual TLS; both or
  // neither, and only with tls_ca_file.
  std::string tls_cert_file;
  std::string tls_key_file;
  // File holding the bearer token sent with every call.
  std::string auth_token_file;
};

// Keepalive of open calls, parked ones (a join waiting for its world, a
// rendezvous wait) included: a ping once the connection has been silent
// for `time`; a call whose connection misses the answer for `timeout`
// fails UNAVAILABLE, and the retry moves on. That is how a client learns
// of a replica that is paused or cut off (its TCP connection silent, not
// closed).
struct Keepalive {
  absl::Duration time = absl::Seconds(3);
  absl::Duration timeout = absl::Seconds(2);
  friend bool operator==(const Keepalive& a, const Keepalive& b) {
    return a.time == b.time && a.timeout == b.timeout;
  }
};
// The keepalive for coordinators whose leader lease is `lease` (as their
// answers say, common/leader_hint.h; zero: not known, a single
// coordinator). A frozen leader fails the calls open on it about when a
// standby may take over from it (the lease): the default above at 5 s
// (shardd's default --leader-lease) and longer; under 5 s a ping every
// lease / 4 (500 ms at the most often, as shardd accepts) answered within
// lease / 2.
Keepalive KeepaliveForLease(absl::Duration lease);
// Reconnecting to a replica that went away: first after 100 ms, then
// backing off to at most 400 ms (gRPC's default grows to 120 s), so a
// replica that restarted, or the leader elected among the others, is
// reachable again within half a second of coming up.
inline constexpr int kReconnectBackoffMs = 100;
inline constexpr int kMaxReconnectBackoffMs = 400;
// A lost connection makes gRPC resolve the address again, no sooner than
// this after the last resolution (its default, 30 s, held every call to a
// coordinator restarted in 0.1 s back for 5 s: the channel waits for the
// new resolution before it reconnects).
inline constexpr int kMinReresolveMs = 100;

// INVALID_ARGUMENT for unreadable files or an inconsistent combination.
// Connects lazily.
absl::StatusOr<std::shared_ptr<grpc::Channel>> NewCoordinatorChannel(
    const std::string& address, const ChannelSecurity& security,
    int max_receive_bytes, const Keepalive& keepalive = {});

}  // namespace shard::client

#endif  // SHARD_CLIENT_COORDINATOR_CHANNEL_H_
