// shardctl's operator commands: status, describe, delete-job, drain. Each
// adds its subcommand to the shardctl app (see command.h) and prints a
// table, or JSON with --output json.
#ifndef CLIENT_SHARDCTL_ADMIN_COMMANDS_H_
#define CLIENT_SHARDCTL_ADMIN_COMMANDS_H_

#include "CLI/CLI.hpp"
#include "client/shardctl/command.h"

namespace shard::shardctl {

// status [--output table|json]: every job; with several replicas in
// --coordinator, each replica's role first.
Command AddStatus(CLI::App& shardctl);

// describe --job ID [--output table|json]: one job and its members.
Command AddDescribe(CLI::App& shardctl);

// delete-job --job ID [--force] [--output table|json]
Command AddDeleteJob(CLI::App& shardctl);

// drain [--output table|json]: the coordinator drains and exits.
Command AddDrain(CLI::App& shardctl);

}  // namespace shard::shardctl

#endif  // CLIENT_SHARDCTL_ADMIN_COMMANDS_H_
