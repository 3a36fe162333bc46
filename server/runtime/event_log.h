// One line per event on stderr: "<RFC 3339 UTC time> <message>".
//
// LogEvent() only stamps the line with the time and queues it for a writer
// thread, so callers may hold their locks: a slow stderr (a full pipe, a
// slow terminal or log collector) never delays a call. At most
// kMaxQueuedEvents lines wait; past that, lines are dropped and counted and
// the next line written says how many were lost. Queued lines are written
// when the process exits normally (an atexit handler) and by
// FlushEventLog(). Thread-safe.
#ifndef SERVER_RUNTIME_EVENT_LOG_H_
#define SERVER_RUNTIME_EVENT_LOG_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace shard::server {

inline constexpr size_t kMaxQueuedEvents = 10000;

void LogEvent(absl::string_view message);
// Blocks until every line queued so far was written.
void FlushEventLog();

}  // namespace shard::server

#endif  // SERVER_RUNTIME_EVENT_LOG_H_
