// One line per event on stderr: "<RFC 3339 UTC time> <message>".
// Thread-safe: each line is written with a single call.
#ifndef SERVER_EVENT_LOG_H_
#define SERVER_EVENT_LOG_H_

#include "absl/strings/string_view.h"

namespace shard::server {

void LogEvent(absl::string_view message);

}  // namespace shard::server

#endif  // SERVER_EVENT_LOG_H_
