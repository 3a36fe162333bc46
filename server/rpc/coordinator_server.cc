#include "server/rpc/coordinator_server.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/security/secret_files.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "server/rpc/lease_advert.h"
#include "server/rpc/listen_failure.h"
#include "server/runtime/bound_address.h"
#include "server/runtime/event_log.h"
#include "server/security/tls_material.h"

namespace shard::server {
namespace {

constexpr char kServiceName[] = "shard.v1.Coordinator";
// SERVING while the process serves at all (a standby replica and a draining
// server included): what a liveness probe asks.
constexpr char kLivenessServiceName[] = "liveness";

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(
    const CoordinatorServerOptions& options) {
  const bool any = !options.tls_cert_file.empty() ||
                   !options.tls_key_file.empty() ||
                   !options.tls_client_ca_file.empty();
  if (!any) return grpc::InsecureServerCredentials();
  if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs both --tls-cert and --tls-key (and --tls-client-ca for "
        "mutual TLS)");
  }
  absl::StatusOr<std::string> cert =
      security::ReadPemFile(options.tls_cert_file, "--tls-cert");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key =
      security::ReadPrivateKeyFile(options.tls_key_file, "--tls-key");
  if (!key.ok()) return key.status();
  security::TlsFiles files;
  files.cert_file = options.tls_cert_file;
  files.cert_pem = *cert;
  files.key_file = options.tls_key_file;
  files.key_pem = *key;
  if (!options.tls_client_ca_file.empty()) {
    absl::StatusOr<std::string> ca =
        security::ReadPemFile(options.tls_client_ca_file, "--tls-client-ca");
    if (!ca.ok()) return ca.status();
    files.client_ca_file = options.tls_client_ca_file;
    files.client_ca_pem = *ca;
  }
  // A pair that does not belong together, or an expired certificate, is a
  // bad flag: say so now instead of failing to listen.
  absl::StatusOr<std::vector<std::string>> warnings =
      security::CheckServerTls(files, absl::Now());
  if (!warnings.ok()) return warnings.status();
  for (const std::string& warning : *warnings) LogEvent(warning);
  grpc::SslServerCredentialsOptions ssl(
      GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  ssl.pem_key_cert_pairs.push_back({files.key_pem, files.cert_pem});
  if (!files.client_ca_file.empty()) {
    ssl.pem_root_certs = files.client_ca_pem;
    ssl.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

CoordinatorServer::CoordinatorServer(CoordinatorServerOptions options)
    : options_(std::move(options)), slot_(options_.serving_gate) {}

absl::StatusOr<std::unique_ptr<CoordinatorServer>> CoordinatorServer::Start(
    std::shared_ptr<CoordinatorService> service,
    CoordinatorServerOptions options) {
  std::unique_ptr<CoordinatorServer> server(
      new CoordinatorServer(std::move(options)));
  const CoordinatorServerOptions& opts = server->options_;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      Credentials(opts);
  if (!credentials.ok()) return credentials.status();
  server->tls_ = !opts.tls_cert_file.empty();
  if (absl::Status s = CheckPolicyOptions(opts); !s.ok()) return s;
  absl::StatusOr<std::optional<security::BearerToken>> token =
      TokenOf(opts.auth_token_file, "--auth-token-file");
  if (!token.ok()) return token.status();
  server->token_ = *std::move(token);
  absl::StatusOr<std::optional<security::BearerToken>> admin =
      TokenOf(opts.admin_token_file, "--admin-token-file");
  if (!admin.ok()) return admin.status();
  server->admin_token_ = *std::move(admin);
  server->grpc_service_ =
      std::make_unique<GrpcCoordinator>(&server->slot_, server->GlueOptions());
  if (absl::Status s = server->Listen(*credentials); !s.ok()) return s;
  if (absl::Status s = server->ListenForHealth(); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<CallbackQueueWaker>> waker =
      CallbackQueueWaker::Start();
  if (!waker.ok()) return waker.status();
  server->waker_ = *std::move(waker);
  if (service != nullptr) {
    server->Serve(std::move(service));
  } else {
    server->SetServing(false);
  }
  return server;
}

absl::StatusOr<std::optional<security::BearerToken>> CoordinatorServer::TokenOf(
    const std::string& path, absl::string_view flag) {
  if (path.empty()) return std::nullopt;
  absl::StatusOr<security::BearerToken> token =
      security::BearerToken::FromFile(path, flag);
  if (!token.ok()) return token.status();
  return *std::move(token);
}

absl::Status CoordinatorServer::CheckPolicyOptions(
    const CoordinatorServerOptions& opts) {
  if (opts.auth_policy == nullptr) return absl::OkStatus();
  if (!opts.auth_token_file.empty() || !opts.admin_token_file.empty()) {
    return absl::InvalidArgumentError(
        "--auth-policy names every principal: give it without "
        "--auth-token-file and --admin-token-file (put the tokens' SHA-256 "
        "digests in the policy: docs/operations.md, \"Tenants\")");
  }
  if (opts.auth_policy->Current()->NamesIdentities() &&
      opts.tls_client_ca_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        opts.auth_policy->path(),
        " names client certificate identities, which only --tls-client-ca "
        "verifies: add --tls-client-ca (with --tls-cert and --tls-key)"));
  }
  return absl::OkStatus();
}

GrpcCoordinatorOptions CoordinatorServer::GlueOptions() {
  GrpcCoordinatorOptions glue;
  glue.authorization.token = token_ ? &*token_ : nullptr;
  glue.authorization.admin_token = admin_token_ ? &*admin_token_ : nullptr;
  glue.authorization.policy = options_.auth_policy;
  if (options_.metrics != nullptr) {
    glue.authorization.on_denied =
        [metrics = options_.metrics](absl::string_view reason) {
          metrics->AddAuthDenial(reason);
        };
    glue.stream_hooks.indices_streamed =
        [metrics = options_.metrics](uint64_t count) {
          metrics->AddIndicesStreamed(count);
        };
    glue.stream_hooks.active_changed = [metrics = options_.metrics](int delta) {
      metrics->AddActiveStreams(delta);
    };
  }
  if (options_.on_drain_requested) {
    glue.on_drain = [this] {
      Vacate();
      bool first = false;
      {
        absl::MutexLock lock(&mu_);
        first = !drain_requested_;
        drain_requested_ = true;
      }
      if (first) options_.on_drain_requested();
      return options_.shutdown_grace;
    };
  }
  return glue;
}

absl::Status CoordinatorServer::Listen(
    const std::shared_ptr<grpc::ServerCredentials>& credentials) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  // Without SO_REUSEPORT a busy port fails to bind ("address already in
  // use") instead of a second server sharing it with the first.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Clients ping open calls, parked ones included, to notice a paused or
  // cut off replica: every 3 s, or every 500 ms at the shortest under a
  // short leader lease (client/coordinator_channel.h); gRPC's default would
  // answer such pings with GOAWAY (too many pings). The margin is for
  // timers that fire early.
  builder.AddChannelArgument(
      GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 400);
  builder.AddListeningPort(options_.listen, credentials, &port);
  builder.RegisterService(grpc_service_.get());
  waiting_calls_ = std::make_unique<WaitingCallQueues>(builder);
  builder.SetMaxReceiveMessageSize(options_.max_request_bytes);
  std::vector<
      std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
      interceptors;
  if (options_.metrics != nullptr) {
    interceptors.push_back(options_.metrics->NewInterceptorFactory());
  }
  if (options_.leader_lease > absl::ZeroDuration()) {
    interceptors.push_back(NewLeaseAdvertFactory(options_.leader_lease));
  }
  if (!interceptors.empty()) {
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
  }
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ",
                                               options_.listen, ": ",
                                               ListenFailure(options_.listen)));
  }
  waiting_calls_->Start(grpc_service_.get());
  address_ = BoundAddress(options_.listen, port);
  return absl::OkStatus();
}

absl::Status CoordinatorServer::ListenForHealth() {
  if (options_.health_listen.empty()) return absl::OkStatus();
  grpc::ServerBuilder health_builder;
  health_builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int health_port = 0;
  health_builder.AddListeningPort(
      options_.health_listen, grpc::InsecureServerCredentials(), &health_port);
  health_server_ = health_builder.BuildAndStart();
  if (health_server_ == nullptr || health_port == 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot listen on --health-listen ", options_.health_listen, ": ",
        ListenFailure(options_.health_listen)));
  }
  health_address_ = BoundAddress(options_.health_listen, health_port);
  return absl::OkStatus();
}

CoordinatorServer::~CoordinatorServer() { Stop(absl::ZeroDuration()); }

void CoordinatorServer::SetServing(bool serving) {
  for (grpc::Server* server : {server_.get(), health_server_.get()}) {
    if (server == nullptr) continue;
    grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
    // By name: the overload without one would set every service,
    // liveness included.
    health->SetServingStatus("", serving);
    health->SetServingStatus(kServiceName, serving);
    health->SetServingStatus(kLivenessServiceName, true);
  }
}

void CoordinatorServer::Serve(std::shared_ptr<CoordinatorService> service) {
  slot_.Install(std::move(service));
  SetServing(true);
}

std::shared_ptr<CoordinatorService> CoordinatorServer::Vacate() {
  SetServing(false);
  return slot_.TakeOut();
}

void CoordinatorServer::Stop(absl::Duration grace) {
  {
    absl::MutexLock lock(&mu_);
    if (stopped_ || server_ == nullptr) return;  // Stopped, or never started.
    stopped_ = true;
  }
  Vacate();
  server_->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  server_->Wait();
  waiting_calls_->Stop();
  if (health_server_ != nullptr) {
    health_server_->Shutdown(absl::ToChronoTime(absl::Now()));
    health_server_->Wait();
  }
  waker_.reset();
}

}  // namespace shard::server
