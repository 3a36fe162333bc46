// What a job's spec makes that its creator most likely did not mean, said
// by shardctl create-job and describe (on stderr, so their output stays
// what scripts parse). Pure functions; thread-safe.
#ifndef CLIENT_SHARDCTL_JOB_WARNINGS_H_
#define CLIENT_SHARDCTL_JOB_WARNINGS_H_

#include <string>
#include <vector>

#include "shard/v1/shard.pb.h"

namespace shard::shardctl {

// One line per finding: a mixture's source whose share rounds to 0 samples
// per epoch (it is never served), and a job whose every rank gets 0
// samples per epoch (the drop tail of an epoch shorter than the world).
std::vector<std::string> JobWarnings(const shard::v1::Job& job);

// Prints JobWarnings as "shardctl: warning: ..." lines on stderr.
void PrintJobWarnings(const shard::v1::Job& job);

}  // namespace shard::shardctl

#endif  // CLIENT_SHARDCTL_JOB_WARNINGS_H_
