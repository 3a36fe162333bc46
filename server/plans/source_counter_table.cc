#include "server/plans/source_counter_table.h"

namespace shard::server {

std::shared_ptr<SourceCounters> SourceCounterTable::ForJob(
    uint64_t incarnation, const shard::v1::JobSpec& spec,
    absl::FunctionRef<absl::flat_hash_set<uint64_t>()> live) {
  if (spec.sources_size() == 0) return nullptr;
  return counters_.ForJob(incarnation, live, [&spec] {
    return std::make_shared<SourceCounters>(spec);
  });
}

}  // namespace shard::server
