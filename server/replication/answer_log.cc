#include "server/replication/answer_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace shard::server::replication {

absl::StatusOr<std::unique_ptr<AnswerLog>> AnswerLog::Open(
    const std::string& path) {
  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--answer-log: cannot open ", path, ": ", std::strerror(errno)));
  }
  return std::unique_ptr<AnswerLog>(new AnswerLog(fd));
}

AnswerLog::~AnswerLog() { close(fd_); }

void AnswerLog::Record(int64_t steady_ns, int64_t leadership_revision) const {
  char line[48];
  const int length =
      std::snprintf(line, sizeof(line), "%" PRId64 " %" PRId64 "\n", steady_ns,
                    leadership_revision);
  [[maybe_unused]] const ssize_t written =
      write(fd_, line, static_cast<size_t>(length));
}

}  // namespace shard::server::replication
