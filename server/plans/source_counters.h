// Indices delivered per source of one mixture job, for the metric
// shard_job_source_indices_streamed_total (docs/operations.md). Labels are
// bounded: the first kMaxNamedSources sources count under their own names,
// every later one together under kOtherSources, so a job of 1,024 sources
// adds at most 17 series.
//
// Thread-safe (relaxed atomic counts); shared by the job's streams and the
// metrics scrape (SourceCounterTable hands them out).
#ifndef SERVER_PLANS_SOURCE_COUNTERS_H_
#define SERVER_PLANS_SOURCE_COUNTERS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "shard/v1/shard.pb.h"

namespace shard::server {

class SourceCounters {
 public:
  static constexpr size_t kMaxNamedSources = 16;
  // Not a valid source name (names are [A-Za-z0-9._-]), so no source's
  // own series can be mistaken for it.
  static constexpr char kOtherSources[] = "(other)";

  // `spec`: a normalised spec with at least one source.
  explicit SourceCounters(const shard::v1::JobSpec& spec);

  // The counter each index of the job's dataset counts in, added to
  // `tally` (one entry per counter, see tally_size()).
  void Tally(absl::Span<const uint64_t> indices,
             std::vector<uint64_t>& tally) const;
  size_t tally_size() const { return labels_.size(); }
  // Adds a tally (of tally_size() entries) to the counts.
  void Add(absl::Span<const uint64_t> tally);

  // (label, indices delivered) per counter, in source order.
  std::vector<std::pair<std::string, uint64_t>> Counts() const;

 private:
  std::vector<std::string> labels_;
  // Where each counter's indices end (the last: the dataset's end).
  std::vector<uint64_t> ends_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;
};

}  // namespace shard::server

#endif  // SERVER_PLANS_SOURCE_COUNTERS_H_
