// Training checkpoints: model, optimizer and (epoch, position) in one file
// per progress point, checkpoint-<epoch>-<position>.pt, written atomically
// (temporary file, fsync, rename, fsync of the directory) so a crash leaves
// a whole file or none. The coordinator's committed progress says which
// file to resume from: a checkpoint is written before its progress is
// committed, and older files are pruned only after a newer commit, so the
// committed one always exists. Errors are returned as absl::Status
// (libtorch exceptions are caught).
#ifndef TRAINER_CHECKPOINT_H_
#define TRAINER_CHECKPOINT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "torch/nn/module.h"
#include "torch/optim/optimizer.h"

namespace shard::trainer {

// Where training continues: the global position reached in an epoch.
struct Progress {
  uint64_t epoch = 0;
  uint64_t position = 0;
};

inline bool operator<(const Progress& a, const Progress& b) {
  return a.epoch != b.epoch ? a.epoch < b.epoch : a.position < b.position;
}

// The checkpoint file of `progress` inside `dir`.
std::string CheckpointPath(const std::string& dir, const Progress& progress);

absl::Status SaveCheckpoint(const std::string& dir, torch::nn::Module& model,
                            torch::optim::Optimizer& optimizer,
                            const Progress& progress);

// Loads the checkpoint of `progress` into model and optimizer. NOT_FOUND if
// there is none; DATA_LOSS if it does not read back or names other progress.
absl::Status LoadCheckpoint(const std::string& dir, const Progress& progress,
                            torch::nn::Module& model,
                            torch::optim::Optimizer& optimizer);

// Deletes every checkpoint file in `dir` except the one of `keep`.
void PruneCheckpoints(const std::string& dir, const Progress& keep);

}  // namespace shard::trainer

#endif  // TRAINER_CHECKPOINT_H_
