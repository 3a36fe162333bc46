#include "server/plans/source_counters.h"

#include <algorithm>

#include "common/plan/mixtures/mixture.h"

namespace shard::server {

SourceCounters::SourceCounters(const shard::v1::JobSpec& spec) {
  const std::vector<uint64_t> ends = plan::SourceEnds(spec);
  const size_t named = std::min(ends.size(), kMaxNamedSources);
  for (size_t k = 0; k < named; ++k) {
    labels_.push_back(spec.sources(static_cast<int>(k)).name());
    ends_.push_back(ends[k]);
  }
  if (ends.size() > named) {
    labels_.push_back(kOtherSources);
    ends_.push_back(ends.back());
  }
  counts_ = std::make_unique<std::atomic<uint64_t>[]>(labels_.size());
}

void SourceCounters::Tally(absl::Span<const uint64_t> indices,
                           std::vector<uint64_t>& tally) const {
  for (uint64_t index : indices) {
    const size_t k = plan::SourceOf(ends_, index);
    if (k < tally.size()) ++tally[k];
  }
}

void SourceCounters::Add(absl::Span<const uint64_t> tally) {
  for (size_t k = 0; k < tally.size() && k < labels_.size(); ++k) {
    if (tally[k] > 0) counts_[k].fetch_add(tally[k], std::memory_order_relaxed);
  }
}

std::vector<std::pair<std::string, uint64_t>> SourceCounters::Counts() const {
  std::vector<std::pair<std::string, uint64_t>> counts;
  for (size_t k = 0; k < labels_.size(); ++k) {
    counts.emplace_back(labels_[k], counts_[k].load(std::memory_order_relaxed));
  }
  return counts;
}

}  // namespace shard::server
