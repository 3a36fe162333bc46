// A replica's record of every moment it admitted a call (or a streamed
// chunk) as the leader, for fault checkers (shardd --answer-log): one line
// per admission, "<CLOCK_MONOTONIC nanoseconds> <leadership revision>",
// written at once (a replica killed with SIGKILL loses none). Two replicas
// on one host share the clock, so a checker can prove that no two
// leaderships ever admitted calls at the same instant.
//
// Thread-safe: each line is one append-mode write(2).
#ifndef SERVER_REPLICATION_ANSWER_LOG_H_
#define SERVER_REPLICATION_ANSWER_LOG_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace shard::server::replication {

class AnswerLog {
 public:
  // Opens `path` for appending (created if missing); INVALID_ARGUMENT
  // naming --answer-log when it cannot be.
  static absl::StatusOr<std::unique_ptr<AnswerLog>> Open(
      const std::string& path);
  ~AnswerLog();
  AnswerLog(const AnswerLog&) = delete;
  AnswerLog& operator=(const AnswerLog&) = delete;

  // Appends one admission; a failed write is ignored (a diagnostic).
  void Record(int64_t steady_ns, int64_t leadership_revision) const;

 private:
  explicit AnswerLog(int fd) : fd_(fd) {}
  const int fd_;
};

}  // namespace shard::server::replication

#endif  // SERVER_REPLICATION_ANSWER_LOG_H_
