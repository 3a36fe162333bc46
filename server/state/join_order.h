// The members of a job in join order, with O(1) lookup, append and
// removal: a job of 100,000 ranks whose members all expire at once costs
// 100,000 removals, not 100,000 shifts of the rest of a vector (about
// 5 * 10^9 string moves under the coordinator's lock).
//
// A copy is independent of the original (the index is rebuilt for the
// copy's own list). Not thread-safe: owned by a JobState under its
// owner's lock.
#ifndef SERVER_STATE_JOIN_ORDER_H_
#define SERVER_STATE_JOIN_ORDER_H_

#include <cstddef>
#include <list>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace shard::server {

class JoinOrder {
 public:
  using const_iterator = std::list<std::string>::const_iterator;

  JoinOrder() = default;
  JoinOrder(const JoinOrder& other);
  JoinOrder& operator=(const JoinOrder& other);
  // Moving keeps the list's nodes, so the index stays valid.
  JoinOrder(JoinOrder&&) = default;
  JoinOrder& operator=(JoinOrder&&) = default;

  // Appends `member`; false (and no change) if it is already in.
  bool Add(const std::string& member);
  // Removes `member`; a no-op if it is not in.
  void Remove(absl::string_view member);
  bool Contains(absl::string_view member) const;

  size_t size() const { return order_.size(); }
  bool empty() const { return order_.empty(); }
  const_iterator begin() const { return order_.begin(); }
  const_iterator end() const { return order_.end(); }

 private:
  std::list<std::string> order_;
  absl::flat_hash_map<std::string, std::list<std::string>::iterator> index_;
};

}  // namespace shard::server

#endif  // SERVER_STATE_JOIN_ORDER_H_
