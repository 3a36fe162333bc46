#include "common/plan/window_batches.h"

#include <algorithm>
#include <set>
#include <utility>

#include "common/plan/keyed_permutation.h"

namespace shard::plan {
namespace {

// A micro-batch: its samples as indices into the cost-sorted window (in
// that order), and what it costs.
struct MicroBatch {
  std::vector<uint64_t> samples;
  uint64_t sum = 0;
  uint64_t cost = 0;
};

void Add(const std::vector<WindowEntry>& sorted, uint64_t sample,
         const BatchPolicy& policy, MicroBatch& batch) {
  batch.samples.push_back(sample);
  batch.sum += sorted[sample].cost;
  batch.cost = policy.CostOf(batch.samples.size(), batch.sum,
                             sorted[batch.samples.front()].cost);
}

// `entries` (in increasing position) sorted by cost, largest first, equal
// costs in position order: a stable radix sort on the cost's two 16-bit
// halves, low half first (O(n + 2^16) a pass; a comparison sort of a
// window of 65,536 takes several times as long).
std::vector<WindowEntry> SortedByCost(std::vector<WindowEntry> entries) {
  std::vector<WindowEntry> sorted(entries.size());
  std::vector<uint64_t> starts(size_t{1} << 16);
  for (int shift : {0, 16}) {
    const auto digit = [shift](const WindowEntry& entry) {
      return (~entry.cost >> shift) & 0xffff;  // ~: largest cost first
    };
    std::fill(starts.begin(), starts.end(), 0);
    for (const WindowEntry& entry : entries) ++starts[digit(entry)];
    uint64_t at = 0;
    for (uint64_t& start : starts) at += std::exchange(start, at);
    for (const WindowEntry& entry : entries)
      sorted[starts[digit(entry)]++] = entry;
    entries.swap(sorted);
  }
  return entries;
}

// Consecutive micro-batches of the cost-sorted window: batch_size samples
// each (the last may hold fewer), or each as many samples as batch_tokens
// allows (at least one).
std::vector<MicroBatch> ConsecutiveBatches(
    const std::vector<WindowEntry>& sorted, const BatchPolicy& policy) {
  std::vector<MicroBatch> batches;
  uint64_t next = 0;
  while (next < sorted.size()) {
    MicroBatch& batch = batches.emplace_back();
    Add(sorted, next++, policy, batch);
    while (next < sorted.size()) {
      if (policy.batch_size > 0) {
        if (batch.samples.size() == policy.batch_size) break;
      } else if (policy.CostOf(batch.samples.size() + 1,
                               batch.sum + sorted[next].cost,
                               sorted[batch.samples.front()].cost) >
                 policy.batch_tokens) {
        break;
      }
      Add(sorted, next++, policy, batch);
    }
  }
  return batches;
}

// Deals the samples from `run_begin` on (the cheapest, in cost order) into
// `world` micro-batches: the first W samples one each, then every sample to
// the micro-batch that costs least once it is added (the lowest-numbered on
// a tie). Requires at least W samples from run_begin.
std::vector<MicroBatch> DealByLeastCost(const std::vector<WindowEntry>& sorted,
                                        uint64_t run_begin, uint64_t world,
                                        const BatchPolicy& policy) {
  std::vector<MicroBatch> batches(world);
  const auto cost_with_one_more = [&](const MicroBatch& batch) {
    return policy.cost_model == BatchCostModel::kSum
               ? batch.sum
               : (batch.samples.size() + 1) *
                     uint64_t{sorted[batch.samples.front()].cost};
  };
  std::set<std::pair<uint64_t, uint64_t>> by_cost;  // (cost if added, batch)
  for (uint64_t b = 0; b < world; ++b) {
    Add(sorted, run_begin + b, policy, batches[b]);
    by_cost.emplace(cost_with_one_more(batches[b]), b);
  }
  for (uint64_t sample = run_begin + world; sample < sorted.size(); ++sample) {
    const uint64_t b = by_cost.begin()->second;
    by_cost.erase(by_cost.begin());
    Add(sorted, sample, policy, batches[b]);
    by_cost.emplace(cost_with_one_more(batches[b]), b);
  }
  return batches;
}

// The window's micro-batches, a multiple of `world` of them, most
// expensive first (ties: the one holding the earlier sample first). When
// the consecutive batches are not a multiple of W, the last k = count % W
// of them (the cheapest samples), with the W before them too if they hold
// fewer than W samples, are dealt again into W micro-batches.
std::vector<MicroBatch> GroupWindow(const std::vector<WindowEntry>& sorted,
                                    uint64_t world, const BatchPolicy& policy) {
  std::vector<MicroBatch> batches = ConsecutiveBatches(sorted, policy);
  size_t whole = batches.size() - batches.size() % world;
  if (whole < batches.size() &&
      sorted.size() - batches[whole].samples.front() < world) {
    whole -= world;  // There are W batches before: the window holds >= W.
  }
  if (whole < batches.size()) {
    const uint64_t run_begin = batches[whole].samples.front();
    batches.resize(whole);
    for (MicroBatch& dealt :
         DealByLeastCost(sorted, run_begin, world, policy)) {
      batches.push_back(std::move(dealt));
    }
  }
  std::sort(batches.begin(), batches.end(),
            [](const MicroBatch& a, const MicroBatch& b) {
              return a.cost != b.cost ? a.cost > b.cost
                                      : a.samples.front() < b.samples.front();
            });
  return batches;
}

}  // namespace

WindowBatches::WindowBatches(uint32_t world_size,
                             std::vector<uint64_t> positions,
                             std::vector<uint64_t> batch_ends,
                             WindowCosts costs)
    : world_size_(world_size),
      positions_(std::move(positions)),
      batch_ends_(std::move(batch_ends)),
      costs_(std::move(costs)) {}

uint64_t WindowBatches::BatchBegin(uint64_t step, uint32_t rank) const {
  const uint64_t batch = step * world_size_ + rank;
  return batch == 0 ? 0 : batch_ends_[batch - 1];
}

WindowBatches ArrangeWindow(std::vector<WindowEntry> entries,
                            uint32_t world_size, const BatchPolicy& policy,
                            uint64_t step_key) {
  entries = SortedByCost(std::move(entries));
  const std::vector<MicroBatch> batches =
      GroupWindow(entries, world_size, policy);
  const uint64_t steps = batches.size() / world_size;
  const FeistelPermutation step_order(std::max<uint64_t>(steps, 1), step_key);
  std::vector<uint64_t> positions;
  positions.reserve(entries.size());
  std::vector<uint64_t> batch_ends;
  batch_ends.reserve(batches.size());
  WindowCosts costs;
  costs.of_batches.reserve(batches.size());
  for (uint64_t slot = 0; slot < steps; ++slot) {
    const uint64_t step = step_order.At(slot);
    for (uint64_t rank = 0; rank < world_size; ++rank) {
      const MicroBatch& batch = batches[step * world_size + rank];
      for (uint64_t sample : batch.samples) {
        positions.push_back(entries[sample].position);
      }
      batch_ends.push_back(positions.size());
      costs.of_batches.push_back(batch.cost);
      costs.tokens += batch.sum;
      costs.padded_tokens +=
          batch.samples.size() * uint64_t{entries[batch.samples.front()].cost};
    }
  }
  return WindowBatches(world_size, std::move(positions), std::move(batch_ends),
                       std::move(costs));
}

uint64_t StepOrderKey(uint64_t seed, uint64_t epoch, uint64_t window) {
  constexpr uint64_t kStepsSalt = 0x7374657073ull;  // "steps"
  return MixKey(MixKey(MixKey(seed ^ kStepsSalt) + epoch) + window);
}

}  // namespace shard::plan
