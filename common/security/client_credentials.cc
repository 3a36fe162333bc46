#include "common/security/client_credentials.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/security/secret_files.h"

namespace shard::security {

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ClientCredentials(
    const ClientTlsFlags& flags) {
  const bool has_cert = !flags.cert_file.empty();
  if (has_cert != !flags.key_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        flags.cert_flag, " and ", flags.key_flag, " go together (mutual TLS)"));
  }
  if (flags.ca_file.empty()) {
    if (has_cert) {
      return absl::InvalidArgumentError(
          absl::StrCat(flags.cert_flag, " needs ", flags.ca_flag,
                       " (the CA of ", flags.ca_signs, ")"));
    }
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions ssl;
  absl::StatusOr<std::string> ca = ReadPemFile(flags.ca_file, flags.ca_flag);
  if (!ca.ok()) return ca.status();
  ssl.pem_root_certs = *std::move(ca);
  if (has_cert) {
    absl::StatusOr<std::string> cert =
        ReadPemFile(flags.cert_file, flags.cert_flag);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key =
        ReadPrivateKeyFile(flags.key_file, flags.key_flag);
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(ssl);
}

}  // namespace shard::security
