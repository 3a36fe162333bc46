// The security options every client command takes: --tls-ca, --tls-cert,
// --tls-key and --auth-token-file (default $SHARD_TOKEN_FILE). See
// coordinator_channel.h for what each does.
#ifndef CLIENT_SECURITY_FLAGS_H_
#define CLIENT_SECURITY_FLAGS_H_

#include "CLI/CLI.hpp"
#include "common/cli/command_line.h"
#include "shard/client/coordinator_channel.h"

namespace shard::client {

// Binds the options to *security's fields (owned by the caller).
inline void AddSecurityOptions(CLI::App& app, ChannelSecurity* security) {
  cli::AddOption(app, "--tls-ca", security->tls_ca_file,
                 "PEM CA that signed the coordinator's certificate; enables "
                 "TLS")
      ->type_name("PEM")
      ->group("Security");
  cli::AddOption(app, "--tls-cert", security->tls_cert_file,
                 "PEM client certificate (mutual TLS; with --tls-key)")
      ->type_name("PEM")
      ->group("Security");
  cli::AddOption(app, "--tls-key", security->tls_key_file,
                 "PEM private key of --tls-cert")
      ->type_name("PEM")
      ->group("Security");
  cli::AddOption(app, "--auth-token-file", security->auth_token_file,
                 "file holding the bearer token the coordinator requires")
      ->type_name("FILE")
      ->envname("SHARD_TOKEN_FILE")
      ->group("Security");
}

}  // namespace shard::client

#endif  // CLIENT_SECURITY_FLAGS_H_
