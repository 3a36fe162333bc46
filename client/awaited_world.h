// The members a job's forming world waits for and the rule that sets that
// number, as the waiting line of a join and `shardctl describe` say it.
// Pure functions of a Job view; thread-safe.
#ifndef CLIENT_AWAITED_WORLD_H_
#define CLIENT_AWAITED_WORLD_H_

#include <cstdint>
#include <string>

#include "shard/v1/shard.pb.h"

namespace shard::client {

struct AwaitedWorld {
  uint64_t size = 0;
  // "the job's world size", "the launch's size", "the elastic minimum";
  // empty from a coordinator that does not say (size is then its
  // min_world_size, or world_size).
  std::string rule;
};

// What `job` (no world formed) waits for.
AwaitedWorld AwaitedWorldOf(const shard::v1::Job& job);

// "1 more member (3 of 4 joined; 4: the launch's size)".
std::string MissingMembersText(const shard::v1::Job& job);

}  // namespace shard::client

#endif  // CLIENT_AWAITED_WORLD_H_
