#include "common/plan/batches/window_batches.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "common/plan/batches/first_fit.h"
#include "common/plan/shuffles/keyed_permutation.h"

namespace shard::plan {
namespace {

// A micro-batch: its samples as indices into the cost-sorted window (in
// increasing order: the first is the largest), the sum of their costs, and
// the cost the steps are balanced by (the cost model's, or the time cost
// with attention_length, at most 2^64 - 1).
struct MicroBatch {
  std::vector<uint64_t> samples;
  uint64_t sum = 0;
  uint64_t cost = 0;
};

// What `batch` costs, as the steps are balanced, once `sample` is added.
uint64_t CostWith(const std::vector<WindowEntry>& sorted,
                  const MicroBatch& batch, uint64_t sample,
                  const BatchPolicy& policy) {
  if (policy.attention_length > 0) {
    const uint64_t time = policy.TimeOf(sorted[sample].cost);
    return batch.cost > UINT64_MAX - time ? UINT64_MAX : batch.cost + time;
  }
  const uint32_t longest = batch.samples.empty()
                               ? sorted[sample].cost
                               : sorted[batch.samples.front()].cost;
  return policy.CostOf(batch.samples.size() + 1,
                       batch.sum + sorted[sample].cost, longest);
}

void Add(const std::vector<WindowEntry>& sorted, uint64_t sample,
         const BatchPolicy& policy, MicroBatch& batch) {
  batch.cost = CostWith(sorted, batch, sample, policy);
  batch.samples.push_back(sample);
  batch.sum += sorted[sample].cost;
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

// The most micro-batches first fit makes of `sorted` under batch_tokens T:
// one per sample over T, and of the others' sum C at most 2C / T + 1 (of
// any two micro-batches at most half full, the later one's first sample
// would have fitted in the earlier one).
uint64_t FirstFitBound(const std::vector<WindowEntry>& sorted,
                       const BatchPolicy& policy) {
  uint64_t over = 0, sum = 0;
  for (const WindowEntry& entry : sorted) {
    if (entry.cost > policy.batch_tokens) {
      ++over;
    } else {
      sum += entry.cost;
    }
  }
  return over + 2 * sum / policy.batch_tokens + 1;
}

// `sum` with a token budget: first-fit-decreasing. Each sample of the
// cost-sorted window in turn goes to the first micro-batch (in the order
// they were started) whose sum with it is at most batch_tokens, or starts
// a new one; a sample over the budget starts one that takes nothing else.
std::vector<MicroBatch> FirstFitDecreasing(
    const std::vector<WindowEntry>& sorted, const BatchPolicy& policy) {
  std::vector<MicroBatch> batches;
  FirstFit fit(policy.batch_tokens, FirstFitBound(sorted, policy));
  for (uint64_t sample = 0; sample < sorted.size(); ++sample) {
    const uint64_t batch = fit.Place(sorted[sample].cost);
    if (batch == batches.size()) batches.emplace_back();
    Add(sorted, sample, policy, batches[batch]);
  }
  return batches;
}

// Step 2 of a window: first-fit-decreasing for `sum` with a budget,
// consecutive micro-batches otherwise.
std::vector<MicroBatch> FirstBatches(const std::vector<WindowEntry>& sorted,
                                     const BatchPolicy& policy) {
  return policy.batch_tokens > 0 && policy.cost_model == BatchCostModel::kSum
             ? FirstFitDecreasing(sorted, policy)
             : ConsecutiveBatches(sorted, policy);
}

// The samples of `batches` from `first` on, in sorted-window order.
std::vector<uint64_t> RunFrom(const std::vector<MicroBatch>& batches,
                              size_t first) {
  std::vector<uint64_t> run;
  for (size_t b = first; b < batches.size(); ++b) {
    run.insert(run.end(), batches[b].samples.begin(), batches[b].samples.end());
  }
  std::sort(run.begin(), run.end());
  return run;
}

// Fixed counts: deals the `run` (sorted-window indices, increasing) into
// `count` micro-batches: its first `count` samples one each, then every
// sample to the micro-batch that costs least once it is added among those
// holding fewer than batch_size samples (among all when every one is full;
// the lowest-numbered on a tie). Requires at least `count` samples.
std::vector<MicroBatch> DealByLeastCost(const std::vector<WindowEntry>& sorted,
                                        const std::vector<uint64_t>& run,
                                        uint64_t count,
                                        const BatchPolicy& policy) {
  std::vector<MicroBatch> batches(count);
  // Open micro-batches by (samples held, number): costs are compared per
  // sample, as a sample's cost changes each one's cost differently.
  std::set<uint64_t> open;
  for (uint64_t b = 0; b < count; ++b) {
    Add(sorted, run[b], policy, batches[b]);
    if (batches[b].samples.size() < policy.batch_size) open.insert(b);
  }
  for (auto next = run.begin() + count; next != run.end(); ++next) {
    const uint64_t sample = *next;
    std::optional<std::pair<uint64_t, uint64_t>> best;  // (cost, batch)
    const auto consider = [&](uint64_t b) {
      const std::pair<uint64_t, uint64_t> candidate(
          CostWith(sorted, batches[b], sample, policy), b);
      if (!best || candidate < *best) best = candidate;
    };
    if (!open.empty()) {
      for (uint64_t b : open) consider(b);
    } else {
      for (uint64_t b = 0; b < count; ++b) consider(b);
    }
    MicroBatch& chosen = batches[best->second];
    Add(sorted, sample, policy, chosen);
    if (chosen.samples.size() >= policy.batch_size) open.erase(best->second);
  }
  return batches;
}

// Token budgets: the `run` (sorted-window indices, increasing) cut in
// order into micro-batches that cost at most `limit` as the steps are
// balanced, and with an attention length hold at most batch_tokens tokens
// too (a sample over them alone); with `count`, a new one also starts when
// the samples left are as many as the micro-batches still to start, so
// that there are exactly `count`.
std::vector<MicroBatch> Pack(const std::vector<WindowEntry>& sorted,
                             const std::vector<uint64_t>& run, uint64_t limit,
                             const BatchPolicy& policy,
                             std::optional<uint64_t> count) {
  std::vector<MicroBatch> batches;
  for (uint64_t i = 0; i < run.size(); ++i) {
    const uint64_t sample = run[i];
    if (!batches.empty()) {
      const MicroBatch& last = batches.back();
      const bool over_tokens =
          policy.attention_length > 0 &&
          last.sum + sorted[sample].cost > policy.batch_tokens;
      const bool full =
          over_tokens || CostWith(sorted, last, sample, policy) > limit;
      const bool short_of_batches =
          count.has_value() && run.size() - i == *count - batches.size();
      if (!full && !short_of_batches) {
        Add(sorted, sample, policy, batches.back());
        continue;
      }
    }
    Add(sorted, sample, policy, batches.emplace_back());
  }
  return batches;
}

// The limit under which Pack cuts micro-batches by the token budget alone:
// the budget, or with an attention length (whose budget Pack keeps
// anyway) none on the time cost.
uint64_t TokenLimit(const BatchPolicy& policy) {
  return policy.attention_length > 0 ? UINT64_MAX : policy.batch_tokens;
}

// Token budgets: the `run` cut in order into exactly `count`
// micro-batches, the most expensive as cheap as possible: Pack with the
// smallest limit that makes at most `count` of them. Requires at least
// `count` samples.
std::vector<MicroBatch> CutByLeastLargest(
    const std::vector<WindowEntry>& sorted, const std::vector<uint64_t>& run,
    uint64_t count, const BatchPolicy& policy) {
  uint64_t low = 0;
  uint64_t high = run.size() * uint64_t{sorted[run.front()].cost};
  if (policy.attention_length > 0) {  // the whole run's time cost
    MicroBatch whole;
    for (uint64_t sample : run) Add(sorted, sample, policy, whole);
    high = whole.cost;
  }
  while (low < high) {
    const uint64_t middle = low + (high - low) / 2;
    if (Pack(sorted, run, middle, policy, std::nullopt).size() <= count) {
      high = middle;
    } else {
      low = middle + 1;
    }
  }
  return Pack(sorted, run, low, policy, count);
}

// Most expensive first; ties: the one holding the earlier sample first.
void SortByCost(std::vector<MicroBatch>::iterator begin,
                std::vector<MicroBatch>::iterator end) {
  std::sort(begin, end, [](const MicroBatch& a, const MicroBatch& b) {
    return a.cost != b.cost ? a.cost > b.cost
                            : a.samples.front() < b.samples.front();
  });
}

// The final run (docs/balanced-batches.md, "A window's micro-batches",
// step 3): the index of its first consecutive batch among the window's
// `batches` (batches.size() when nothing is dealt again), how many
// micro-batches it is dealt into, and its samples (RunFrom).
struct FinalRun {
  size_t first_batch;
  uint64_t dealt;
  std::vector<uint64_t> samples;
};

uint64_t RoundUp(uint64_t value, uint64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

FinalRun ChooseFinalRun(const std::vector<WindowEntry>& sorted,
                        const std::vector<MicroBatch>& batches, uint64_t world,
                        const BatchPolicy& policy) {
  const size_t m = batches.size();
  const size_t k = m % world;
  if (k == 0 && policy.batch_size > 0 &&
      batches.back().samples.size() == policy.batch_size) {
    return {m, 0, {}};  // whole steps of full micro-batches
  }
  // samples_after[b]: the samples of batches b .. m - 1.
  std::vector<uint64_t> samples_after(m + 1, 0);
  for (size_t b = m; b-- > 0;) {
    samples_after[b] = samples_after[b + 1] + batches[b].samples.size();
  }
  const auto samples_from = [&](size_t batch) { return samples_after[batch]; };
  const size_t left_over = k != 0 ? k : world;
  size_t first = m - left_over;
  if (m > 2 * world) {
    first -= world;
  } else if (samples_from(first) < world && first >= world) {
    first -= world;
  }
  uint64_t dealt =
      m > 2 * world && samples_from(first) >= 2 * world ? 2 * world : world;
  if (policy.batch_tokens == 0) return {first, dealt, RunFrom(batches, first)};
  // A token budget is a hard cap: the run is cut into no fewer
  // micro-batches than Pack makes of it under the budget, and needs a
  // sample for each; the W micro-batches before it at a time join it until
  // it has them. The whole window always has: it holds a multiple of W
  // samples (EpochBatches).
  while (true) {
    std::vector<uint64_t> run = RunFrom(batches, first);
    const uint64_t cut =
        Pack(sorted, run, TokenLimit(policy), policy, std::nullopt).size();
    dealt = std::max<uint64_t>(dealt, RoundUp(cut, world));
    if (samples_from(first) >= dealt || first == 0) {
      return {first, dealt, std::move(run)};
    }
    first = first > world ? first - world : 0;
  }
}

// The window's micro-batches, a multiple of `world` of them, in step order:
// step 2's micro-batches sorted by cost, except the final run's, which
// are dealt again (fixed counts: DealByLeastCost; token budgets:
// CutByLeastLargest) into micro-batches that make the window's last steps
// by themselves, sorted by cost among themselves.
std::vector<MicroBatch> GroupWindow(const std::vector<WindowEntry>& sorted,
                                    uint64_t world, const BatchPolicy& policy) {
  std::vector<MicroBatch> batches = FirstBatches(sorted, policy);
  const FinalRun run = ChooseFinalRun(sorted, batches, world, policy);
  const size_t kept = run.first_batch;
  if (kept == batches.size()) {
    SortByCost(batches.begin(), batches.end());
    return batches;
  }
  batches.resize(kept);
  SortByCost(batches.begin(), batches.end());
  for (MicroBatch& batch :
       policy.batch_size > 0
           ? DealByLeastCost(sorted, run.samples, run.dealt, policy)
           : CutByLeastLargest(sorted, run.samples, run.dealt, policy)) {
    batches.push_back(std::move(batch));
  }
  SortByCost(batches.begin() + kept, batches.end());
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
  costs.capacity = policy.batch_tokens * batches.size();
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
