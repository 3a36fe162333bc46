// The one gRPC server of a shardd process, for its whole life: listening
// port, TLS or mutual TLS, bearer-token authentication, request size
// limit, the gRPC health service ("" and shard.v1.Coordinator: SERVING
// while a CoordinatorService serves, NOT_SERVING otherwise; "liveness":
// SERVING while the server runs), server reflection, RPC metrics, and a
// graceful stop; its CallbackQueueWaker keeps gRPC from reading requests
// late, and its WaitingCallQueues serve the calls that wait. What it serves is
// a ServingSlot: a replica's role change installs or takes out the service
// (Serve, Vacate), the server and its port stay. Used by shardd and by tests.
//
// Thread-safety: every method may run on any thread; Stop() is idempotent.
// Shares the services it serves (see ServingSlot for who destroys them);
// does not own the metrics, which must outlive it.
#ifndef SERVER_RPC_COORDINATOR_SERVER_H_
#define SERVER_RPC_COORDINATOR_SERVER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "server/metrics/server_metrics.h"
#include "server/rpc/callback_queue_waker.h"
#include "server/rpc/grpc_coordinator.h"
#include "server/rpc/serving_slot.h"
#include "server/rpc/waiting_call_queues.h"
#include "server/security/bearer_token.h"
#include "server/security/policy_holder.h"
#include "server/services/coordinator_service.h"

namespace shard::server {

struct CoordinatorServerOptions {
  // "HOST:PORT"; port 0 picks a free port (see address()).
  std::string listen = "0.0.0.0:7070";
  // PEM files. cert + key: TLS. With client_ca too: mutual TLS (clients
  // must present a certificate signed by it). All empty: plaintext.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  // Every Coordinator call must carry "authorization: Bearer <token>"
  // with the token in this file (empty: no authentication). The health
  // service stays open (kubelet probes send no token).
  std::string auth_token_file;
  // Admin calls (DeleteJob, Drain) must carry the token in this file; the
  // other calls accept it too (empty: admin calls take auth_token_file's).
  std::string admin_token_file;
  // --auth-policy: principals, roles and tenants (call_authorizer.h);
  // null: the token files above decide. Not with them (INVALID_ARGUMENT);
  // a policy naming certificate identities needs tls_client_ca_file.
  std::shared_ptr<security::PolicyHolder> auth_policy;
  // "HOST:PORT" of a second, plaintext listener serving only the gRPC
  // health service, for probes that cannot speak TLS (Kubernetes' native
  // gRPC probes). Empty: none.
  std::string health_listen;
  // Largest request message accepted (RESOURCE_EXHAUSTED beyond).
  int max_request_bytes = 4 << 20;
  // RPC latency and indices-streamed metrics (null: none).
  metrics::ServerMetrics* metrics = nullptr;
  // How long in-flight calls may run once a stop begins.
  absl::Duration shutdown_grace = absl::Seconds(10);
  // Replicated coordinators: OK while this replica may serve (the leader
  // with a live lease); otherwise its refusal (UNAVAILABLE naming the
  // leader) answers every call but Drain, its payloads under
  // kLeaderMetadataKey and kStandbyMetadataKey going back as those
  // trailers. Unset: always open. Called on every call and before every
  // streamed chunk: must be cheap and thread-safe.
  std::function<absl::Status()> serving_gate;
  // Replicated coordinators: the leader lease, sent with every answer as
  // kLeaderLeaseMetadataKey (common/leader_hint.h). Zero: not sent.
  absl::Duration leader_lease = absl::ZeroDuration();
  // Called (once) when a client sends the Drain RPC, after the server
  // turned NOT_SERVING; the owner then calls Stop(). Unset: Drain answers
  // UNIMPLEMENTED.
  std::function<void()> on_drain_requested;
};

class CoordinatorServer {
 public:
  // Serves `service` (null: nothing yet, health NOT_SERVING, as a standby
  // replica). INVALID_ARGUMENT for unreadable or inconsistent TLS/token
  // files, UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<CoordinatorServer>> Start(
      std::shared_ptr<CoordinatorService> service,
      CoordinatorServerOptions options);
  ~CoordinatorServer();  // Stops with no grace if Stop() was not called.

  // "HOST:PORT" with the bound port.
  const std::string& address() const { return address_; }
  // "HOST:PORT" of the health listener ("" without one).
  const std::string& health_address() const { return health_address_; }
  bool tls() const { return tls_; }

  // Serves `service` from now on, health SERVING. Requires that nothing
  // serves.
  void Serve(std::shared_ptr<CoordinatorService> service);
  // Health NOT_SERVING; takes out what serves, drained (new and waiting
  // calls answer UNAVAILABLE, streams end UNAVAILABLE at their next
  // chunk), and returns it (null if nothing served).
  std::shared_ptr<CoordinatorService> Vacate();

  // Vacate(), then calls still in flight (a stream whose client reads
  // nothing) get `grace` before the server stops.
  void Stop(absl::Duration grace);

 private:
  explicit CoordinatorServer(CoordinatorServerOptions options);
  // Health status of the server and the Coordinator service, on every
  // listener.
  void SetServing(bool serving);
  // The bearer token in `path` (nullopt for no path); errors name `flag`.
  static absl::StatusOr<std::optional<security::BearerToken>> TokenOf(
      const std::string& path, absl::string_view flag);
  // INVALID_ARGUMENT when auth_policy cannot go with the other options.
  static absl::Status CheckPolicyOptions(const CoordinatorServerOptions& opts);
  // The gRPC glue's options: authorization, gate, stream metrics, drain.
  GrpcCoordinatorOptions GlueOptions();
  // Builds and starts the main server on options_.listen.
  absl::Status Listen(
      const std::shared_ptr<grpc::ServerCredentials>& credentials);
  // The extra plaintext health listener, when options_.health_listen asks.
  absl::Status ListenForHealth();

  CoordinatorServerOptions options_;
  ServingSlot slot_;
  std::optional<security::BearerToken> token_;
  std::optional<security::BearerToken> admin_token_;
  std::unique_ptr<GrpcCoordinator> grpc_service_;
  // The queues of the calls that wait; outlive server_.
  std::unique_ptr<WaitingCallQueues> waiting_calls_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::Server> health_server_;  // Null without one.
  // Keeps the callback threads polling while the server runs.
  std::unique_ptr<CallbackQueueWaker> waker_;
  std::string address_;
  std::string health_address_;
  bool tls_ = false;
  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool drain_requested_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shard::server

#endif  // SERVER_RPC_COORDINATOR_SERVER_H_
