// The SourceCounters of every mixture job, by the job's incarnation (a job
// deleted and re-created under its id counts from zero). Streams get their
// job's counters when they open; the metrics scrape reads them. Entries of
// jobs no longer held are dropped when a new job's counters are made and
// at every scrape (Retain), so the table holds about the jobs there are.
//
// Thread-safe (a JobTable).
#ifndef SERVER_PLANS_SOURCE_COUNTER_TABLE_H_
#define SERVER_PLANS_SOURCE_COUNTER_TABLE_H_

#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "server/plans/job_table.h"
#include "server/plans/source_counters.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

class SourceCounterTable {
 public:
  // The counters of the job of `incarnation` and normalised `spec`, made
  // on first use; null when the job is not a mixture. Making one first
  // drops the entries whose incarnation is not in live() (the jobs held;
  // called only then).
  std::shared_ptr<SourceCounters> ForJob(
      uint64_t incarnation, const shard::v1::JobSpec& spec,
      absl::FunctionRef<absl::flat_hash_set<uint64_t>()> live);
  // The job's counters, or null when none were made (no stream yet).
  std::shared_ptr<const SourceCounters> Find(uint64_t incarnation) const {
    return counters_.Find(incarnation);
  }
  // Drops the entries whose incarnation is not in `live`.
  void Retain(const absl::flat_hash_set<uint64_t>& live) {
    counters_.Retain(live);
  }

 private:
  JobTable<SourceCounters> counters_;
};

}  // namespace shard::server

#endif  // SERVER_PLANS_SOURCE_COUNTER_TABLE_H_
