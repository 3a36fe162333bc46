// A shardctl command: a CLI11 subcommand with its options bound, and what
// runs it once the command line selected it.
#ifndef CLIENT_SHARDCTL_COMMAND_H_
#define CLIENT_SHARDCTL_COMMAND_H_

#include <functional>
#include <memory>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shard/client/coordinator_client.h"

namespace shard::shardctl {

struct Command {
  // Owned by the shardctl app it was added to.
  CLI::App* app = nullptr;
  // Writes the result to stdout; a failed status is printed by main().
  // `options` are the global options (coordinator, timeouts, security).
  std::function<absl::Status(const client::ClientOptions& options)> run;
};

// A client of the coordinator `options` name (the commands that talk to it).
inline absl::StatusOr<std::shared_ptr<client::CoordinatorClient>> Connect(
    const client::ClientOptions& options) {
  absl::StatusOr<std::unique_ptr<client::CoordinatorClient>> connected =
      client::CoordinatorClient::Connect(options);
  if (!connected.ok()) return connected.status();
  return std::shared_ptr<client::CoordinatorClient>(*std::move(connected));
}

}  // namespace shard::shardctl

#endif  // CLIENT_SHARDCTL_COMMAND_H_
