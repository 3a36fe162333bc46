#include "common/plan/batches/epoch_batches.h"

#include <utility>
#include <vector>

namespace shard::plan {

uint64_t EpochBatches::Served(uint64_t left, uint32_t world_size, Tail tail,
                              const BatchPolicy& policy) {
  if (left == 0) return 0;
  const uint64_t last = (left - 1) % policy.WindowSamples(world_size) + 1;
  const uint64_t over = last % world_size;
  if (over == 0) return left;
  return tail == Tail::kDrop ? left - over : left - over + world_size;
}

EpochBatches::EpochBatches(uint64_t order_size, uint32_t world_size, Tail tail,
                           const BatchPolicy& policy)
    : EpochBatches(EpochRest::Whole(order_size), world_size, tail, policy,
                   /*base=*/0, /*first_window=*/0) {}

EpochBatches::EpochBatches(const EpochRest& rest, uint32_t world_size,
                           Tail tail, const BatchPolicy& policy, uint64_t base,
                           uint64_t first_window)
    : world_size_(world_size),
      policy_(policy),
      window_samples_(policy.WindowSamples(world_size)),
      base_(base),
      first_window_(first_window),
      rest_(rest.Resized(Served(rest.size(), world_size, tail, policy))),
      windows_((rest_.size() + window_samples_ - 1) / window_samples_) {}

WindowBatches EpochBatches::Arrange(uint64_t window, const CostsOf& costs_of,
                                    uint64_t seed, uint64_t epoch) const {
  const uint64_t first = window * window_samples_;
  std::vector<uint64_t> positions(WindowEnd(window) - WindowBegin(window));
  rest_.Positions(first, absl::MakeSpan(positions));
  std::vector<uint32_t> costs(positions.size());
  costs_of(positions, absl::MakeSpan(costs));
  std::vector<WindowEntry> entries(costs.size());
  for (uint64_t i = 0; i < costs.size(); ++i) {
    entries[i] = WindowEntry{positions[i], costs[i]};
  }
  return ArrangeWindow(std::move(entries), world_size_, policy_,
                       StepOrderKey(seed, epoch, NumberOf(window)));
}

EpochBatches::CostsOf EpochBatches::CostsInOrder(const EpochOrder& order,
                                                 const CostTable& costs) {
  return [&order, &costs](absl::Span<const uint64_t> positions,
                          absl::Span<uint32_t> out) {
    std::vector<uint64_t> samples(positions.size());
    for (uint64_t i = 0; i < samples.size(); ++i) {
      samples[i] = positions[i] % order.size();
    }
    order.AtMany(absl::MakeSpan(samples));
    costs.Gather(samples, out);
  };
}

}  // namespace shard::plan
