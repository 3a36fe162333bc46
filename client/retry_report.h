// What the command-line tools (shardctl, shard-train) print while the
// client library retries an unavailable coordinator (RetryPolicy::
// on_retrying): one line on stderr before each pause that ends
// RetryPolicy::report_every or more after the previous line:
//   shardctl: coordinator 10.0.0.5:7070 unavailable (GetJob: failed to
//   connect ...: Connection refused); retrying for 40s more
//   (--retry-deadline)
#ifndef CLIENT_RETRY_REPORT_H_
#define CLIENT_RETRY_REPORT_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace shard::client {

std::function<void(const absl::Status&, absl::Duration)> RetryReporter(
    std::string program, std::string address);

}  // namespace shard::client

#endif  // CLIENT_RETRY_REPORT_H_
