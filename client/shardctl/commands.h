// shardctl subcommands. Each parses its own flags, talks to the coordinator
// through CoordinatorClient, writes its result to stdout and returns a
// status; main() prints a failed status as one line on stderr.
#ifndef CLIENT_SHARDCTL_COMMANDS_H_
#define CLIENT_SHARDCTL_COMMANDS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "shard/client/coordinator_client.h"

namespace shard::shardctl {

// create-job --job ID --size N --world-size W [--seed S]
//            [--shuffle true|false] [--tail pad|drop|uneven]
//            [--torch-randperm legacy|2.6] [--min-world-size N]
//            [--max-world-size N] [--shuffle-algorithm torch|feistel|block]
//            [--block-size B] [--window-blocks K]
absl::Status CreateJob(client::CoordinatorClient& client,
                       const std::vector<std::string>& args);

// plan --job ID --epoch E --rank R: the rank's indices, one per line.
absl::Status Plan(client::CoordinatorClient& client,
                  const std::vector<std::string>& args);

// consume --job ID --member M [--epochs K] [--wait 5m]: joins, waits for the
// world, streams K epochs (heartbeating meanwhile) and prints
// "EPOCH RANK INDEX" per index.
absl::Status Consume(const std::shared_ptr<client::CoordinatorClient>& client,
                     const std::vector<std::string>& args);

}  // namespace shard::shardctl

#endif  // CLIENT_SHARDCTL_COMMANDS_H_
