// What the metrics show of one job: a few numbers, copied under the core's
// lock at scrape time (never the job's members), and a mixture's counts of
// indices streamed per source (at most 17).
#ifndef SERVER_METRICS_JOB_FIGURES_H_
#define SERVER_METRICS_JOB_FIGURES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace shard::server {

struct JobFigures {
  std::string job_id;
  uint32_t members = 0;
  uint32_t world_size = 0;
  uint64_t generation = 0;
  uint64_t committed_epoch = 0;
  uint64_t committed_position = 0;
  // A mixture that has streamed: indices delivered per source (label,
  // count), see SourceCounters.
  std::vector<std::pair<std::string, uint64_t>> indices_streamed_by_source;
};

}  // namespace shard::server

#endif  // SERVER_METRICS_JOB_FIGURES_H_
