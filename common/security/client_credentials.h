// The gRPC channel credentials of a client from its TLS flags: plaintext
// without a CA, TLS with the CA, mutual TLS with a certificate and key
// too. One rule for the coordinator's clients (--tls-ca, --tls-cert,
// --tls-key) and for shardd's etcd client (--etcd-ca, --etcd-cert,
// --etcd-key). Stateless; thread-safe.
#ifndef COMMON_SECURITY_CLIENT_CREDENTIALS_H_
#define COMMON_SECURITY_CLIENT_CREDENTIALS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/credentials.h"

namespace shard::security {

// The files and the flags that named them (for messages).
struct ClientTlsFlags {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  const char* ca_flag = "--tls-ca";
  const char* cert_flag = "--tls-cert";
  const char* key_flag = "--tls-key";
  // Whose certificate the CA signed, e.g. "the coordinator's certificate".
  const char* ca_signs = "the server's certificate";
};

// INVALID_ARGUMENT, naming the flags, for a certificate without its key
// (or the reverse) or a certificate without a CA; the errors of
// ReadPemFile and ReadPrivateKeyFile for files that cannot be used.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ClientCredentials(
    const ClientTlsFlags& flags);

}  // namespace shard::security

#endif  // COMMON_SECURITY_CLIENT_CREDENTIALS_H_
