// What the metrics show of one job: a few numbers, copied under the core's
// lock at scrape time (never the job's members).
#ifndef SERVER_JOB_FIGURES_H_
#define SERVER_JOB_FIGURES_H_

#include <cstdint>
#include <string>

namespace shard::server {

struct JobFigures {
  std::string job_id;
  uint32_t members = 0;
  uint32_t world_size = 0;
  uint64_t generation = 0;
  uint64_t committed_epoch = 0;
  uint64_t committed_position = 0;
};

}  // namespace shard::server

#endif  // SERVER_JOB_FIGURES_H_
