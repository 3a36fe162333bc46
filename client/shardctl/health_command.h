// shardctl health [--service NAME]: asks each address in --coordinator for
// its gRPC health (no retry, no leader following) and prints one line per
// endpoint, like `etcdctl endpoint health`; fails (exit 1) unless every one
// is SERVING.
#ifndef CLIENT_SHARDCTL_HEALTH_COMMAND_H_
#define CLIENT_SHARDCTL_HEALTH_COMMAND_H_

#include "CLI/CLI.hpp"
#include "client/shardctl/command.h"

namespace shard::shardctl {

Command AddHealth(CLI::App& shardctl);

}  // namespace shard::shardctl

#endif  // CLIENT_SHARDCTL_HEALTH_COMMAND_H_
