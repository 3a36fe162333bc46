// shardctl's job commands: create-job, plan, consume. Each adds its
// subcommand to the shardctl app; see command.h.
#ifndef CLIENT_SHARDCTL_COMMANDS_H_
#define CLIENT_SHARDCTL_COMMANDS_H_

#include "CLI/CLI.hpp"
#include "client/shardctl/command.h"

namespace shard::shardctl {

// create-job --job ID --size N --world-size W [job spec options]
Command AddCreateJob(CLI::App& shardctl);

// plan --job ID --epoch E --rank R: the rank's indices, one per line.
Command AddPlan(CLI::App& shardctl);

// consume --job ID --member M [--epochs K] [--wait 5m]: joins, waits for
// the world, streams K epochs (heartbeating meanwhile), prints
// "EPOCH RANK INDEX" per index, then, once every rank of its world is done
// (a barrier through the job's store, at most --wait), leaves the job.
Command AddConsume(CLI::App& shardctl);

}  // namespace shard::shardctl

#endif  // CLIENT_SHARDCTL_COMMANDS_H_
