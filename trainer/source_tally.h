// What shard-train prints about a mixture (docs/mixtures.md): the samples
// the job plans per epoch from each source, and the samples one rank
// trained from each source in an epoch (the figure as the trainer sees it).
#ifndef TRAINER_SOURCE_TALLY_H_
#define TRAINER_SOURCE_TALLY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "shard/v1/shard.pb.h"

namespace shard::trainer {

// "NAME=COUNT ..." of the job's samples per epoch from each source
// (plan::SourceCounts); empty for a job that is not a mixture.
std::string PlannedPerSource(const shard::v1::JobSpec& spec);

// Counts trained samples per source of a mixture. A job that is not a
// mixture counts nothing. Not thread-safe; one per epoch.
class SourceTally {
 public:
  // `spec` is the job's (normalised: every source's size set).
  explicit SourceTally(const shard::v1::JobSpec& spec);

  bool mixture() const { return !ends_.empty(); }
  // Counts global sample indices (each in 0 .. dataset_size - 1).
  void Add(const std::vector<int64_t>& indices);
  // "NAME=COUNT ..." of everything added.
  std::string Line() const;

 private:
  std::vector<std::string> names_;
  std::vector<uint64_t> ends_;  // plan::SourceEnds
  std::vector<uint64_t> counts_;
};

}  // namespace shard::trainer

#endif  // TRAINER_SOURCE_TALLY_H_
