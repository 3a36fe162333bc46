#include "server/state/launch_sizes.h"

namespace shard::server {

void LaunchSizes::Set(const std::string& member_id, uint32_t world_size) {
  Erase(member_id);
  if (world_size == 0) return;
  by_member_.emplace(member_id, world_size);
  ++members_by_size_[world_size];
}

void LaunchSizes::Erase(const std::string& member_id) {
  auto found = by_member_.find(member_id);
  if (found == by_member_.end()) return;
  auto counted = members_by_size_.find(found->second);
  if (--counted->second == 0) members_by_size_.erase(counted);
  by_member_.erase(found);
}

}  // namespace shard::server
