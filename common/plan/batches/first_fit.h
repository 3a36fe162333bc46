// First fit over micro-batches under a budget: each sample goes to the
// first micro-batch, in the order they were started, with room left for
// its cost, or starts a new one. A segment tree over the room each holds
// (a micro-batch not started yet has the whole budget), so that
// first-fit-decreasing packs a window of S samples in O(S log B) for B
// micro-batches (docs/balanced-batches.md, "A window's micro-batches",
// step 2). Not thread-safe; a value owned by one packing.
#ifndef COMMON_PLAN_BATCHES_FIRST_FIT_H_
#define COMMON_PLAN_BATCHES_FIRST_FIT_H_

#include <cstdint>
#include <vector>

namespace shard::plan {

class FirstFit {
 public:
  // Micro-batches of `budget` each; the tree holds `expected` of them
  // (at least 1) and doubles when more are started.
  FirstFit(uint64_t budget, uint64_t expected);

  // Puts a sample of `cost` into the first started micro-batch with room
  // for it (a cost of 0 fits a full one), else starts the next one; a cost
  // over the budget starts one that takes nothing else. Returns the
  // micro-batch's number (0, 1, ... in the order started).
  uint64_t Place(uint64_t cost);

  // Micro-batches started so far.
  uint64_t started() const { return started_; }

 private:
  // The first leaf with room for `wanted`, or started_ when none has.
  uint64_t FirstWithRoom(int64_t wanted) const;
  void Take(uint64_t batch, int64_t cost);
  // Doubles the leaves; the new ones hold the whole budget.
  void Grow();

  int64_t budget_;
  uint64_t started_ = 0;
  uint64_t leaves_ = 1;  // a power of two
  // room_[1] is the root; node i's children are 2i and 2i + 1; leaf b is
  // room_[leaves_ + b]. -1: no room even for a sample of cost 0.
  std::vector<int64_t> room_;
};

}  // namespace shard::plan

#endif  // COMMON_PLAN_BATCHES_FIRST_FIT_H_
