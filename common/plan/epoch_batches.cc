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

WindowBatches EpochBatches::Arrange(uint64_t window, const CostsOf& costs_of,
                                    uint64_t seed, uint64_t epoch) const {
  const uint64_t begin = WindowBegin(window);
  std::vector<uint32_t> costs(WindowEnd(window) - begin);
  costs_of(begin, absl::MakeSpan(costs));
  std::vector<WindowEntry> entries(costs.size());
  for (uint64_t i = 0; i < costs.size(); ++i) {
    entries[i] = WindowEntry{begin + i, costs[i]};
  }
  return ArrangeWindow(std::move(entries), world_size_, policy_,
                       StepOrderKey(seed, epoch, window));
}

EpochBatches::CostsOf EpochBatches::CostsInOrder(const EpochOrder& order,
                                                 const CostTable& costs) {
  return [&order, &costs](uint64_t first, absl::Span<uint32_t> out) {
    std::vector<uint64_t> samples(out.size());
    for (uint64_t i = 0; i < samples.size(); ++i) {
      samples[i] = (first + i) % order.size();
    }
    order.AtMany(absl::MakeSpan(samples));
    costs.Gather(samples, out);
  };
}

}  // namespace shard::plan
