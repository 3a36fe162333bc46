// What shard-train prints about its own progress: a line every
// --progress-every while it trains, and a summary when it is done.
//
//   progress rank=0 epoch=2/3 step=120 position=7680/60000 (12.8%)
//     world_samples_per_s=9870 eta=1m32s
//   summary rank=0 epochs=3 steps=2814 samples=90048 train_seconds=37.1
//     samples_per_s=2427
//
// Positions and world_samples_per_s count the whole world's samples (the
// job's global position); the ETA covers the epochs left. Both count
// from the first step, not the wait for the world. The summary counts
// this process's own steps and samples, re-joins included. Not
// thread-safe: one training loop calls it.
#ifndef TRAINER_PROGRESS_REPORT_H_
#define TRAINER_PROGRESS_REPORT_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/time/time.h"

namespace shard::trainer {

class ProgressReport {
 public:
  // `every` == 0 turns the periodic line off (the summary stays).
  ProgressReport(std::FILE* out, absl::Duration every, uint64_t epochs);

  // After a step of `samples` of `rank`: the epoch and the global position
  // reached, where the epoch ends and a whole epoch's length (both in the
  // current world).
  void Step(uint32_t rank, uint64_t epoch, uint64_t position,
            uint64_t epoch_end, uint64_t epoch_length, uint64_t samples);

  // The summary line, once training ended.
  void Summary() const;

 private:
  std::FILE* const out_;
  const absl::Duration every_;
  const uint64_t epochs_;
  uint32_t rank_ = 0;
  // The first step's time: rates and the summary count from it (not
  // from the wait for the world).
  absl::Time first_step_;
  absl::Time next_line_;
  uint64_t steps_ = 0;
  uint64_t samples_ = 0;
  uint64_t epochs_seen_ = 0;
  uint64_t last_epoch_ = UINT64_MAX;
  // Global position at the first step this process saw (the rate's base).
  bool have_first_ = false;
  uint64_t first_epoch_ = 0;
  uint64_t first_position_ = 0;
};

}  // namespace shard::trainer

#endif  // TRAINER_PROGRESS_REPORT_H_
