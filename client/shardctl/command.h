// A shardctl command: a CLI11 subcommand with its options bound, and what
// runs it once the command line selected it.
#ifndef CLIENT_SHARDCTL_COMMAND_H_
#define CLIENT_SHARDCTL_COMMAND_H_

#include <functional>
#include <memory>
#include <utility>

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

// A Command::run for the commands that talk to the coordinator: connects
// to the one `options` names (a failure is the command's status) and runs
// `action(client, options)`.
template <typename Action>
std::function<absl::Status(const client::ClientOptions&)> Connected(
    Action action) {
  return [action = std::move(action)](
             const client::ClientOptions& options) -> absl::Status {
    absl::StatusOr<std::unique_ptr<client::CoordinatorClient>> connected =
        client::CoordinatorClient::Connect(options);
    if (!connected.ok()) return connected.status();
    const std::shared_ptr<client::CoordinatorClient> client =
        *std::move(connected);
    return action(client, options);
  };
}

}  // namespace shard::shardctl

#endif  // CLIENT_SHARDCTL_COMMAND_H_
