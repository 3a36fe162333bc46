// First fit over micro-batches under a budget: which is the first one, in
// the order they were started, with room left for a cost. A segment tree
// over the room each holds (a micro-batch not started yet has the whole
// budget), so that first-fit-decreasing packs a window of S samples in
// O(S log S) (docs/balanced-batches.md, "A window's micro-batches",
// step 2). Not thread-safe; a value owned by one packing.
#ifndef COMMON_PLAN_BATCHES_FIRST_FIT_H_
#define COMMON_PLAN_BATCHES_FIRST_FIT_H_

#include <cstdint>
#include <optional>
#include <vector>

namespace shard::plan {

class FirstFit {
 public:
  // Room for at most `capacity` micro-batches, each with `budget` at first.
  FirstFit(uint64_t capacity, uint64_t budget);

  // The first micro-batch whose room is at least `cost` (one not started
  // yet when no started one has it); nullopt when none of the `capacity`
  // has (a cost over the budget, or every one too full).
  std::optional<uint64_t> FirstWithRoom(uint64_t cost) const;
  // Takes `cost` from micro-batch `batch`'s room; one over its room (a
  // sample over the budget, alone) leaves it no room for anything.
  void Take(uint64_t batch, uint64_t cost);

 private:
  uint64_t leaves_;  // a power of two >= capacity
  // room_[1] is the root; node i's children are 2i and 2i + 1; leaf b is
  // room_[leaves_ + b]. -1: no room even for a sample of cost 0.
  std::vector<int64_t> room_;
};

}  // namespace shard::plan

#endif  // COMMON_PLAN_BATCHES_FIRST_FIT_H_
