#include "server/state/job_pattern.h"

#include "absl/strings/str_cat.h"

namespace shard::server {
namespace {

bool IsJobIdCharacter(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

}  // namespace

absl::StatusOr<JobPattern> JobPattern::Parse(absl::string_view text) {
  const bool prefix = absl::EndsWith(text, "*");
  absl::string_view body = prefix ? text.substr(0, text.size() - 1) : text;
  if (!prefix && body.empty()) {
    return absl::InvalidArgumentError(
        "a job pattern is \"*\", \"PREFIX*\" or one job id; it is empty");
  }
  if (body.size() > 128) {
    return absl::InvalidArgumentError(
        "a job pattern is at most 128 characters before its \"*\"");
  }
  for (char c : body) {
    if (!IsJobIdCharacter(c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job pattern \"", text,
          "\" has a character job ids cannot have (they are [A-Za-z0-9._-]"
          "; a \"*\" may only end the pattern)"));
    }
  }
  return JobPattern(std::string(body), !prefix);
}

bool JobPattern::Overlaps(const JobPattern& other) const {
  if (exact_ && other.exact_) return prefix_ == other.prefix_;
  if (exact_) return other.Matches(prefix_);
  if (other.exact_) return Matches(other.prefix_);
  return absl::StartsWith(prefix_, other.prefix_) ||
         absl::StartsWith(other.prefix_, prefix_);
}

}  // namespace shard::server
