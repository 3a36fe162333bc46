// One shardd replica of a coordinator cluster whose state lives in etcd
// (shardd --etcd-endpoints): it stands by, campaigns, leads, and stands by
// again when its leadership ends.
//
// Standing by: an EtcdFollower keeps a hot copy of the state; the gRPC
// server answers every Coordinator call (but Drain) UNAVAILABLE naming the
// leader, in the message and in the shard-leader trailer, and health says
// NOT_SERVING. A LeaderWatch reports each change of the leader key as etcd
// makes it: the leader named is the newest etcd said (never one whose key
// is gone), and the replica campaigns the moment the key is gone. Every
// third of the lease it also renews its own etcd lease and reads the key
// (a watch on a member that stalls says nothing).
//
// One gRPC server serves for the replica's whole life; a standby has no
// CoordinatorService behind it. Leading: the copy is caught up to the
// newest record in etcd, becomes a CoordinatorService over an
// EtcdStateStore fenced by the won leadership (every member gets a fresh
// lease, current epochs' orders are prepared), and the server serves it
// (health SERVING). The lease is renewed every lease / 3; the replica serves
// only while its lease is certainly alive: until 9/10 of the lease after the
// last renewal was sent (checked on every call, so a paused replica that
// wakes up refuses at once, before it notices anything). A renewal that
// fails (an etcd member that does not answer within a quarter of the
// lease) is tried again at once on the next member; the gate reopens when
// one succeeds. Leadership ends when etcd says the lease is gone, when no
// renewal succeeded for a lease plus the etcd timeout, when a fenced
// write fails, or when the leader's watch of its own key sees it deleted
// (etcd may revoke a lease early: etcd-io/etcd#15247; the gate closes at
// once): the gate closes at once, the calls waiting for durability
// answer UNAVAILABLE, the server stops serving the service (its streams end
// UNAVAILABLE at their next chunk), the service is destroyed once its last
// call let go of it, and the replica stands by again with a new session
// (re-reading etcd).
//
// Stop() (SIGTERM) hands a leader's role over at once: the gate closes,
// the writes already accepted become durable (for up to the grace), the
// lease is revoked (a standby watching the key takes over now, not when
// the lease would lapse), then the service is taken out as above and
// calls still in flight (a stream whose client reads nothing) get the
// grace before the server stops. A history
// in etcd that cannot be recovered (DATA_LOSS) stops the loop and is
// reported through on_fatal.
//
// Thread-safe. The replica runs its loop on its own thread.
#ifndef SERVER_REPLICATION_COORDINATOR_REPLICA_H_
#define SERVER_REPLICATION_COORDINATOR_REPLICA_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/metrics/server_metrics.h"
#include "server/replication/answer_log.h"
#include "server/replication/etcd_follower.h"
#include "server/replication/etcd_session.h"
#include "server/replication/etcd_state_store.h"
#include "server/rpc/coordinator_server.h"
#include "server/services/coordinator_service.h"

namespace shard::server::replication {

struct ReplicaOptions {
  // etcd endpoints, key prefix, TLS, and the leader lease (lease_ttl).
  EtcdSession::Options etcd;
  // HOST:PORT clients reach this replica at (the leader key's value, named
  // by standbys). Empty: the bound address, with the host name instead of
  // a wildcard host.
  std::string advertise;
  // Records between the leader's snapshots in etcd.
  uint64_t snapshot_every = 10000;
  CoordinatorOptions coordinator;
  // Listening, TLS, token, health listener, metrics, grace; serving_gate
  // is the replica's.
  CoordinatorServerOptions server;
  // Where every admission as leader is recorded (AnswerLog); empty: not
  // recorded.
  std::string answer_log;
  // Called once if the loop stops on its own (the history in etcd cannot
  // be recovered: DATA_LOSS); fatal() says why.
  std::function<void()> on_fatal;
};

class CoordinatorReplica {
 public:
  // Starts the server, serving nothing yet (so that a bad --listen fails at
  // once: INVALID_ARGUMENT or UNAVAILABLE as CoordinatorServer::Start), and
  // the replica's loop.
  static absl::StatusOr<std::unique_ptr<CoordinatorReplica>> Start(
      ReplicaOptions options);
  // Stop(0) if not stopped.
  ~CoordinatorReplica();
  CoordinatorReplica(const CoordinatorReplica&) = delete;
  CoordinatorReplica& operator=(const CoordinatorReplica&) = delete;

  // HOST:PORT the server is bound to.
  const std::string& address() const { return address_; }
  // What the leader key names this replica as.
  const std::string& identity() const { return identity_; }

  // Drains a leader for up to `grace`, gives up the lease, stops the
  // server and the loop. Idempotent.
  void Stop(absl::Duration grace) ABSL_LOCKS_EXCLUDED(mu_);
  // OK, or why the loop stopped on its own.
  absl::Status fatal() const ABSL_LOCKS_EXCLUDED(mu_);
  // Whether this replica serves as the leader now.
  bool leading() const;
  // Runs `read` with the service while this replica leads (returns false
  // without calling it otherwise). Holds the replica's lock meanwhile.
  bool WithLeaderService(absl::FunctionRef<void(CoordinatorService&)> read)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  explicit CoordinatorReplica(ReplicaOptions options);

  // The loop: sessions one after another until Stop().
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  // One session: follow the state, stand by, campaign, lead; returns to
  // get a new session.
  void RunSession(EtcdSession& session) ABSL_LOCKS_EXCLUDED(mu_);
  // Stands by with `follower` until Stop(), a lost lease or a stopped
  // copy, or a won campaign (then leads).
  void StandBy(EtcdSession& session, std::unique_ptr<EtcdFollower> follower)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Renews the lease if a third of `ttl` passed since the last renewal;
  // NOT_FOUND when etcd says it is gone.
  absl::Status RenewIfDue(EtcdSession& session, absl::Duration ttl);
  // LeaderWatch's report: the hint, and a wake-up when the key is gone.
  void OnLeaderKey(const std::string& identity, int64_t revision)
      ABSL_LOCKS_EXCLUDED(mu_, hint_mu_);
  // Waits for `timeout`, the leader key gone or Stop(); true when stopping.
  bool WaitForLeaderGoneOrStop(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);
  // Leads with `leadership` until it ends or Stop(): TakeOver, open the
  // gate and serve, KeepLeading, StepDown.
  void Lead(EtcdSession& session, EtcdSession::Leadership leadership,
            std::unique_ptr<EtcdFollower> follower, absl::Time leaderless_since)
      ABSL_LOCKS_EXCLUDED(mu_);
  // What a won campaign leads with: the service over the etcd store (which
  // the service owns), and what it took over.
  struct Takeover {
    std::shared_ptr<CoordinatorService> service;
    EtcdStateStore* store = nullptr;
    size_t jobs = 0;
    uint64_t last_record = 0;
  };
  // Catches the follower up with the last record in etcd and builds the
  // service on its state; nullopt (logged) if it cannot catch up.
  std::optional<Takeover> TakeOver(EtcdSession& session,
                                   const EtcdSession::Leadership& leadership,
                                   std::unique_ptr<EtcdFollower> follower)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Renews the lease every third of the granted TTL (after a failed
  // renewal: at once, on the next member), keeping the gate open for a TTL
  // less a tenth after each renewal sent, until Stop(), a broken store, a
  // lost lease or a TTL plus the etcd timeout without a renewal; returns
  // why it ended.
  std::string KeepLeading(EtcdSession& session, const EtcdStateStore& store)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Closes the gate, hands over on Stop(), answers the calls still waiting
  // for durability, and retires the service.
  void StepDown(EtcdSession& session, EtcdStateStore& store,
                const std::string& ended) ABSL_LOCKS_EXCLUDED(mu_);
  // On Stop(): makes the accepted writes durable (for up to the stop
  // grace), then revokes the lease.
  void HandOver(EtcdSession& session, EtcdStateStore& store)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Takes the leader's service out of the server and destroys it here once
  // its last call let go of it (before the session its store uses ends).
  void RetireService() ABSL_LOCKS_EXCLUDED(mu_);
  // The serving gate: OK while leading (recorded in the answer log), else
  // Refusal() with the kStandbyMetadataKey payload.
  absl::Status Gate() const ABSL_LOCKS_EXCLUDED(hint_mu_);
  // Why this replica does not serve (UNAVAILABLE), with the leader it
  // knows as the kLeaderMetadataKey payload.
  absl::Status Refusal() const ABSL_LOCKS_EXCLUDED(hint_mu_);
  // The leader standbys name ("" when none is known, with why when etcd
  // cannot be reached). With a `revision` (what etcd said at it): ignored
  // when etcd said something newer already.
  void SetLeaderHint(std::string leader, std::string etcd_error = "",
                     int64_t revision = 0) ABSL_LOCKS_EXCLUDED(hint_mu_);
  // etcd said there is no leader (and nothing failed since).
  bool KnowsNoLeader() const ABSL_LOCKS_EXCLUDED(hint_mu_);
  // Waits for `timeout` or Stop(); true when stopping.
  bool WaitOrStop(absl::Duration timeout) ABSL_LOCKS_EXCLUDED(mu_);
  bool stopping() const ABSL_LOCKS_EXCLUDED(mu_);
  // The lease was renewed by a call sent at `sent_ns` (steady clock).
  void Renewed(int64_t sent_ns);
  // Keeps the gate open until `until_ns` (steady clock), unless the leader
  // key was lost.
  void ExtendGate(int64_t until_ns);
  // The leader's watch of its own key saw it deleted or replaced: the gate
  // closes for good and KeepLeading wakes up.
  void LoseLeaderKey() ABSL_LOCKS_EXCLUDED(mu_);

  const ReplicaOptions options_;
  std::string address_;
  std::string identity_;

  // Steady-clock nanoseconds until which this replica may serve as the
  // leader (0: not leading). Read on every call.
  std::atomic<int64_t> leading_until_ns_{0};
  // When the lease was last renewed (steady-clock nanoseconds of sending).
  std::atomic<int64_t> renewed_sent_ns_{0};
  // The etcd revision of the leadership being served (set before the gate
  // opens).
  std::atomic<int64_t> leading_revision_{0};
  // Null without ReplicaOptions::answer_log.
  std::unique_ptr<AnswerLog> answer_log_;

  mutable absl::Mutex hint_mu_;
  std::string leader_hint_ ABSL_GUARDED_BY(hint_mu_);
  std::string etcd_error_ ABSL_GUARDED_BY(hint_mu_);
  // When the hint was last set (etcd answered, or failed).
  absl::Time hint_set_ ABSL_GUARDED_BY(hint_mu_) = absl::InfinitePast();
  // The etcd revision of the newest leader key the hint reflects.
  int64_t hint_revision_ ABSL_GUARDED_BY(hint_mu_) = 0;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // A LeaderWatch saw the key gone (a standby's) or this leader's key lost;
  // WaitForLeaderGoneOrStop() resets it.
  bool leader_gone_ ABSL_GUARDED_BY(mu_) = false;
  absl::Duration stop_grace_ ABSL_GUARDED_BY(mu_);
  absl::Status fatal_ ABSL_GUARDED_BY(mu_);
  // The server, from Start() until Stop() stopped it.
  std::unique_ptr<CoordinatorServer> server_;
  // The service the server serves while this replica leads (null
  // otherwise).
  std::shared_ptr<CoordinatorService> leader_service_ ABSL_GUARDED_BY(mu_);
  std::thread loop_;
};

}  // namespace shard::server::replication

#endif  // SERVER_REPLICATION_COORDINATOR_REPLICA_H_
