#include "common/plan/epoch_batches.h"

#include <utility>
#include <vector>

namespace shard::plan {

EpochBatches::EpochBatches(uint64_t order_size, uint32_t world_size, Tail tail,
                           const BatchPolicy& policy)
    : world_size_(world_size),
      policy_(policy),
      window_samples_(policy.WindowSamples(world_size)) {
  uint64_t last = order_size % window_samples_;
  uint64_t full = order_size / window_samples_;
  if (last == 0) last = window_samples_, --full;  // order_size >= 1
  if (last < world_size && tail == Tail::kDrop) {
    last = 0;
  } else if (last < world_size) {
    last = world_size;
  }
  windows_ = full + (last > 0 ? 1 : 0);
  total_ = full * window_samples_ + last;
}

WindowBatches EpochBatches::Arrange(
    uint64_t window, const std::function<uint32_t(uint64_t)>& cost_of,
    uint64_t seed, uint64_t epoch) const {
  std::vector<WindowEntry> entries;
  const uint64_t end = WindowEnd(window);
  entries.reserve(end - WindowBegin(window));
  for (uint64_t p = WindowBegin(window); p < end; ++p) {
    entries.push_back(WindowEntry{p, cost_of(p)});
  }
  return ArrangeWindow(std::move(entries), world_size_, policy_,
                       StepOrderKey(seed, epoch, window));
}

}  // namespace shard::plan
