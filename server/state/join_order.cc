#include "server/state/join_order.h"

namespace shard::server {

JoinOrder::JoinOrder(const JoinOrder& other) {
  for (const std::string& member : other.order_) Add(member);
}

JoinOrder& JoinOrder::operator=(const JoinOrder& other) {
  if (this == &other) return *this;
  order_.clear();
  index_.clear();
  for (const std::string& member : other.order_) Add(member);
  return *this;
}

bool JoinOrder::Add(const std::string& member) {
  if (index_.contains(member)) return false;
  order_.push_back(member);
  index_.emplace(member, std::prev(order_.end()));
  return true;
}

void JoinOrder::Remove(absl::string_view member) {
  auto found = index_.find(member);
  if (found == index_.end()) return;
  order_.erase(found->second);
  index_.erase(found);
}

bool JoinOrder::Contains(absl::string_view member) const {
  return index_.contains(member);
}

}  // namespace shard::server
