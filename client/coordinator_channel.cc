#include "shard/client/coordinator_channel.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/security/client_credentials.h"
#include "common/security/secret_files.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/client_interceptor.h"

namespace shard::client {
namespace {

// A connection attempt may take this long before it counts as failed.
constexpr int kMinConnectTimeoutMs = 2000;

// Adds the authorization metadata to each outgoing call.
class BearerTokenInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit BearerTokenInterceptor(const std::string* header)
      : header_(header) {}
  void Intercept(
      grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::
                PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert({"authorization", *header_});
    }
    methods->Proceed();
  }

 private:
  const std::string* header_;
};

class BearerTokenFactory
    : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit BearerTokenFactory(const std::string& token)
      : header_("Bearer " + token) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new BearerTokenInterceptor(&header_);
  }

 private:
  const std::string header_;  // Lives as long as the channel.
};

}  // namespace

Keepalive KeepaliveForLease(absl::Duration lease) {
  const Keepalive standard;
  if (lease <= absl::ZeroDuration() || lease >= absl::Seconds(5)) {
    return standard;
  }
  return Keepalive{std::max(lease / 4, absl::Milliseconds(500)), lease / 2};
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> NewCoordinatorChannel(
    const std::string& address, const ChannelSecurity& security,
    int max_receive_bytes, const Keepalive& keepalive) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      shard::security::ClientCredentials(
          {security.tls_ca_file, security.tls_cert_file, security.tls_key_file,
           "--tls-ca", "--tls-cert", "--tls-key",
           "the coordinator's certificate"});
  if (!credentials.ok()) return credentials.status();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(max_receive_bytes);
  // While a call is open, ping the coordinator (see Keepalive). shardd
  // accepts pings that often (coordinator_server.cc). gRPC stops pinging
  // after 2 pings without data sent unless told otherwise: a parked call
  // (a join, a rendezvous wait) then learned of a frozen leader only
  // about 30 s later.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS,
              static_cast<int>(absl::ToInt64Milliseconds(keepalive.time)));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
              static_cast<int>(absl::ToInt64Milliseconds(keepalive.timeout)));
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, kReconnectBackoffMs);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kMaxReconnectBackoffMs);
  args.SetInt(GRPC_ARG_DNS_MIN_TIME_BETWEEN_RESOLUTIONS_MS, kMinReresolveMs);
  // gRPC takes this as the shortest time a connection attempt may take
  // (its minimum connect timeout), not as a backoff: at the backoff's
  // 100 ms, a handshake slower than the backoff (a loaded coordinator, TLS
  // far away) was cut off every time and never connected.
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kMinConnectTimeoutMs);
  std::vector<
      std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
      interceptors;
  if (!security.auth_token_file.empty()) {
    absl::StatusOr<std::string> token =
        security::ReadTokenFile(security.auth_token_file, "--auth-token-file");
    if (!token.ok()) return token.status();
    interceptors.push_back(std::make_unique<BearerTokenFactory>(*token));
  }
  return grpc::experimental::CreateCustomChannelWithInterceptors(
      address, *credentials, args, std::move(interceptors));
}

}  // namespace shard::client
