// What the command-line tools (shardctl, shard-train) print on stderr
// while the client library waits:
// - retrying an unavailable coordinator (RetryPolicy::on_retrying): one
//   line before each pause that ends RetryPolicy::report_every or more
//   after the previous line:
//     shardctl: coordinator 10.0.0.5:7070 unavailable (GetJob: failed to
//     connect ...: Connection refused); retrying for 40s more
//     (--retry-deadline)
// - waiting for a job's world to form (ClientOptions::on_waiting):
//     shard-train: job j: waiting for 1 more member (2 of 3 joined; 3: the
//     job's world size), generation 7, 9m50s left
#ifndef CLIENT_PROGRESS_LINES_H_
#define CLIENT_PROGRESS_LINES_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace shard::client {

std::function<void(const absl::Status&, absl::Duration)> RetryReporter(
    std::string program, std::string address);

std::function<void(const std::string&)> WaitingReporter(std::string program);

}  // namespace shard::client

#endif  // CLIENT_PROGRESS_LINES_H_
