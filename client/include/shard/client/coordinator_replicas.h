// The coordinator replicas a client may call (a --coordinator list such as
// "a:7070,b:7070,c:7070", or one address) and the one it calls now.
//
// Replicated coordinators (shardd --etcd-endpoints) serve from one leader;
// the others answer UNAVAILABLE and name the leader in the shard-leader
// trailer. After a call that answered UNAVAILABLE, Failed() moves the
// client on: to the replica the trailer names (added when the list lacks
// it), else to the next in the list, so that the caller's retry goes
// there. A named leader that itself failed without answering (killed,
// frozen, cut off) within kSilentLeaderHoldoff is not called again
// meanwhile: the client stays with the standby that named it, which takes
// over when the leader's lease ends, instead of waiting out another
// connect timeout on a frozen leader. With one address this changes
// nothing.
//
// Replicated coordinators send their leader lease with every answer
// (common/leader_hint.h). Once an answer names a lease whose keepalive
// (KeepaliveForLease) differs from the channels', new channels with that
// keepalive replace them for the calls that follow (calls open on the old
// ones keep them until they end), so that a frozen leader fails the calls
// open on it about when a standby may take over.
//
// Thread-safe; channels connect lazily.
#ifndef SHARD_CLIENT_COORDINATOR_REPLICAS_H_
#define SHARD_CLIENT_COORDINATOR_REPLICAS_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/client_context.h"
#include "shard/client/coordinator_channel.h"
#include "shard/v1/shard.grpc.pb.h"

namespace shard::client {

// The addresses of a comma-separated list (spaces around them ignored):
// each HOST:PORT, [IPV6]:PORT (PORT in 1..65535) or a gRPC target URI such
// as dns:///HOST:PORT. INVALID_ARGUMENT when the list names none, or for
// an address that breaks the rule (without a port gRPC would dial 443),
// naming it and the fix.
absl::StatusOr<std::vector<std::string>> ParseCoordinatorAddresses(
    absl::string_view addresses);

class CoordinatorReplicas {
 public:
  using Stub = shard::v1::Coordinator::Stub;
  // The replica a call goes to.
  struct Pick {
    std::shared_ptr<Stub> stub;
    size_t index = 0;
    std::shared_ptr<grpc::Channel> channel;
  };

  // `addresses`: HOST:PORT ([IPV6]:PORT, or a gRPC target URI such as
  // dns:///HOST:PORT), or several separated by commas. INVALID_ARGUMENT
  // when it names none, for an address without a port (gRPC would dial
  // 443), or for bad security files.
  static absl::StatusOr<std::shared_ptr<CoordinatorReplicas>> Open(
      const std::string& addresses, const ChannelSecurity& security,
      int max_receive_bytes);

  // The replica to call now.
  Pick Current() const ABSL_LOCKS_EXCLUDED(mu_);
  // The call to `used` (finished, with `context`) answered UNAVAILABLE:
  // moves on unless another call already did. True when the retry should
  // come soon (MarkedRetrySoon), not after a growing backoff: a standby
  // replica gave that answer (it is up, and a leader is named or being
  // elected), another call moved on already, or the replica did not answer
  // and the list has one that has not failed to answer since a replica
  // last did (a dead leader costs one pace, not a backoff).
  bool Failed(const Pick& used, const grpc::ClientContext& context)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The call to `used` (with `context`, whose answer's metadata has
  // arrived) got an answer other than UNAVAILABLE.
  void Answered(const Pick& used, const grpc::ClientContext& context)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The pause before a retry: `pause`, or less when the replica to call
  // now was not connected and connects meanwhile (a restarted coordinator
  // is called as soon as it serves, not after the rest of a backoff).
  void PauseBeforeRetry(absl::Duration pause) const ABSL_LOCKS_EXCLUDED(mu_);
  // Every replica known (the list, then leaders learned from trailers).
  std::vector<std::string> addresses() const ABSL_LOCKS_EXCLUDED(mu_);
  // The keepalive of the channels calls go out on now.
  Keepalive keepalive() const ABSL_LOCKS_EXCLUDED(mu_);

  // How long a leader that failed without answering is passed over when a
  // standby names it: shardd's default --leader-lease, within which a
  // standby takes over from a leader that stopped renewing. A leader that
  // was only cut off briefly is called again after it.
  static constexpr absl::Duration kSilentLeaderHoldoff = absl::Seconds(5);

 private:
  CoordinatorReplicas(ChannelSecurity security, int max_receive_bytes)
      : security_(std::move(security)), max_receive_bytes_(max_receive_bytes) {}
  absl::Status Add(const std::string& address)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Follows the leader lease `context`'s answer names, if any (`ended`:
  // the call finished, its trailers may be read).
  void LearnLease(const grpc::ClientContext& context, bool ended)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Replica `index` failed without answering within kSilentLeaderHoldoff.
  bool RecentlySilent(size_t index, absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ChannelSecurity security_;
  const int max_receive_bytes_;
  mutable absl::Mutex mu_;
  std::vector<std::string> addresses_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Stub>> stubs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<grpc::Channel>> channels_ ABSL_GUARDED_BY(mu_);
  Keepalive keepalive_ ABSL_GUARDED_BY(mu_);
  size_t current_ ABSL_GUARDED_BY(mu_) = 0;
  // Replicas in a row that failed without answering since one answered.
  size_t unanswered_ ABSL_GUARDED_BY(mu_) = 0;
  // Per replica: when its calls began failing without an answer
  // (InfinitePast while it answers).
  std::vector<absl::Time> silent_since_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shard::client

#endif  // SHARD_CLIENT_COORDINATOR_REPLICAS_H_
