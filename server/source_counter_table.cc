#include "server/source_counter_table.h"

namespace shard::server {

std::shared_ptr<SourceCounters> SourceCounterTable::ForJob(
    uint64_t incarnation, const shard::v1::JobSpec& spec,
    absl::FunctionRef<absl::flat_hash_set<uint64_t>()> live) {
  if (spec.sources_size() == 0) return nullptr;
  absl::MutexLock lock(&mu_);
  auto it = counters_.find(incarnation);
  if (it != counters_.end()) return it->second;
  RetainLocked(live());
  auto counters = std::make_shared<SourceCounters>(spec);
  counters_.emplace(incarnation, counters);
  return counters;
}

std::shared_ptr<const SourceCounters> SourceCounterTable::Find(
    uint64_t incarnation) const {
  absl::MutexLock lock(&mu_);
  auto it = counters_.find(incarnation);
  return it == counters_.end() ? nullptr : it->second;
}

void SourceCounterTable::Retain(const absl::flat_hash_set<uint64_t>& live) {
  absl::MutexLock lock(&mu_);
  RetainLocked(live);
}

void SourceCounterTable::RetainLocked(
    const absl::flat_hash_set<uint64_t>& live) {
  for (auto it = counters_.begin(); it != counters_.end();) {
    if (live.contains(it->first)) {
      ++it;
    } else {
      counters_.erase(it++);
    }
  }
}

}  // namespace shard::server
