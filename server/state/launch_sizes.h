// The world size each member's launcher started it in (torchrun's
// WORLD_SIZE: the world_size of the spec its join named), kept for members
// that have not been part of a world since they joined. A job restarted as
// a whole, possibly at another size within an elastic job's bounds, forms
// its next world at the largest of them (JobState::WorldSizeAwaited), so
// that it matches the process group its launcher forms. Part of JobState;
// not thread-safe on its own. Largest() is O(1), every change O(log sizes).
#ifndef SERVER_STATE_LAUNCH_SIZES_H_
#define SERVER_STATE_LAUNCH_SIZES_H_

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>

namespace shard::server {

class LaunchSizes {
 public:
  // Records `world_size` for the member (0: forgets it).
  void Set(const std::string& member_id, uint32_t world_size);
  void Erase(const std::string& member_id);
  // The largest size recorded; 0 when none is.
  uint32_t Largest() const {
    return members_by_size_.empty() ? 0 : members_by_size_.rbegin()->first;
  }
  bool empty() const { return by_member_.empty(); }
  size_t size() const { return by_member_.size(); }
  const std::unordered_map<std::string, uint32_t>& by_member() const {
    return by_member_;
  }

 private:
  std::unordered_map<std::string, uint32_t> by_member_;
  // size -> how many members hold it.
  std::map<uint32_t, uint32_t> members_by_size_;
};

}  // namespace shard::server

#endif  // SERVER_STATE_LAUNCH_SIZES_H_
