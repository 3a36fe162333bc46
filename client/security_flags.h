// The security flags every client command takes (shardctl before the
// subcommand, shard-train anywhere): --tls-ca, --tls-cert, --tls-key,
// --auth-token-file. See coordinator_channel.h for what each does.
#ifndef CLIENT_SECURITY_FLAGS_H_
#define CLIENT_SECURITY_FLAGS_H_

#include <set>
#include <string>

#include "client/cli_flags.h"
#include "shard/client/coordinator_channel.h"

namespace shard::client {

inline void AddSecurityFlagNames(std::set<std::string>& accepted) {
  accepted.insert({"tls-ca", "tls-cert", "tls-key", "auth-token-file"});
}

inline ChannelSecurity SecurityFromFlags(const client::CliFlags& flags) {
  ChannelSecurity security;
  security.tls_ca_file = flags.String("tls-ca", "");
  security.tls_cert_file = flags.String("tls-cert", "");
  security.tls_key_file = flags.String("tls-key", "");
  security.auth_token_file = flags.String("auth-token-file", "");
  return security;
}

}  // namespace shard::client

#endif  // CLIENT_SECURITY_FLAGS_H_
