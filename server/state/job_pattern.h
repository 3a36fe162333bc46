// A set of job ids: "*" (every job), "PREFIX*" (the ids that start with
// PREFIX, e.g. "team-a-*") or one job id. PREFIX and ids use the job id's
// characters, [A-Za-z0-9._-]. The --auth-policy's grants and tenants name
// their jobs with one. Immutable; thread-safe.
#ifndef SERVER_STATE_JOB_PATTERN_H_
#define SERVER_STATE_JOB_PATTERN_H_

#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace shard::server {

class JobPattern {
 public:
  // INVALID_ARGUMENT (the reason, without a position) for anything else.
  static absl::StatusOr<JobPattern> Parse(absl::string_view text);

  bool Matches(absl::string_view job_id) const {
    return exact_ ? job_id == prefix_ : absl::StartsWith(job_id, prefix_);
  }
  // Some job id matches both.
  bool Overlaps(const JobPattern& other) const;
  // Every job id `other` matches, this pattern matches too.
  bool Includes(const JobPattern& other) const {
    return exact_ ? other.exact_ && other.prefix_ == prefix_
                  : absl::StartsWith(other.prefix_, prefix_);
  }
  bool MatchesEveryJob() const { return prefix_.empty() && !exact_; }
  // As written in the policy.
  std::string text() const { return exact_ ? prefix_ : prefix_ + "*"; }

  // Calls visit(entry) for each entry of `sorted`, a std::map ordered by
  // job id (its key, or its key's first member), whose id this pattern
  // matches: O(log n + matches).
  template <typename Map, typename Visit>
  void ForEachMatch(const Map& sorted, Visit visit) const {
    for (auto it = sorted.lower_bound(FirstKey<typename Map::key_type>());
         it != sorted.end() && Matches(IdOf(it->first)); ++it) {
      visit(*it);
    }
  }

 private:
  JobPattern(std::string prefix, bool exact)
      : prefix_(std::move(prefix)), exact_(exact) {}

  template <typename Key>
  Key FirstKey() const {
    if constexpr (std::is_same_v<Key, std::string>) {
      return prefix_;
    } else {
      return Key(prefix_, typename Key::second_type{});
    }
  }
  static absl::string_view IdOf(const std::string& key) { return key; }
  template <typename Pair>
  static absl::string_view IdOf(const Pair& key) {
    return key.first;
  }

  std::string prefix_;  // The id itself when exact_.
  bool exact_;
};

}  // namespace shard::server

#endif  // SERVER_STATE_JOB_PATTERN_H_
