#include "client/progress_lines.h"

#include <cstdio>
#include <utility>

namespace shard::client {

std::function<void(const absl::Status&, absl::Duration)> RetryReporter(
    std::string program, std::string address) {
  return [program = std::move(program), address = std::move(address)](
             const absl::Status& last, absl::Duration left) {
    std::fprintf(
        stderr,
        "%s: coordinator %s unavailable (%s); retrying for %s more "
        "(--retry-deadline)\n",
        program.c_str(), address.c_str(), std::string(last.message()).c_str(),
        absl::FormatDuration(absl::Trunc(left, absl::Seconds(1))).c_str());
  };
}

std::function<void(const std::string&)> WaitingReporter(std::string program) {
  return [program = std::move(program)](const std::string& line) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), line.c_str());
  };
}

}  // namespace shard::client
