// shardctl admin subcommands: status, describe, delete-job, drain.
//
// Each prints a human-readable table (default) or, with --output json, one
// JSON document on stdout (protobuf's JSON mapping of the shard.v1 messages,
// field names in lowerCamelCase, 64-bit integers as strings).
#ifndef CLIENT_SHARDCTL_ADMIN_COMMANDS_H_
#define CLIENT_SHARDCTL_ADMIN_COMMANDS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "shard/client/coordinator_client.h"

namespace shard::shardctl {

// status [--output table|json]: every job with its spec, committed epoch
// and position, members and generation. When `options.address` lists
// several replicas (a replicated coordinator), the table starts with each
// replica's role: leader (it answered), not serving (UNAVAILABLE: a
// standby, which names the leader, or a replica that cannot be reached)
// or error.
absl::Status Status(client::CoordinatorClient& client,
                    const client::ClientOptions& options,
                    const std::vector<std::string>& args);

// describe --job ID [--output table|json]: one job with its members.
absl::Status Describe(client::CoordinatorClient& client,
                      const std::vector<std::string>& args);

// delete-job --job ID [--force true] [--output table|json]
absl::Status DeleteJob(client::CoordinatorClient& client,
                       const std::vector<std::string>& args);

// drain [--output table|json]: starts the coordinator's graceful shutdown.
absl::Status Drain(client::CoordinatorClient& client,
                   const std::vector<std::string>& args);

}  // namespace shard::shardctl

#endif  // CLIENT_SHARDCTL_ADMIN_COMMANDS_H_
