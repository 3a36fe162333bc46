// Training checkpoints: model, optimizer and (epoch, position) in one file,
// written atomically (temporary file, fsync, rename, fsync of the directory)
// so a crash leaves either the previous or the new checkpoint, never a torn
// one. Errors are returned as absl::Status (libtorch exceptions are caught).
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

// The checkpoint file inside `dir`.
std::string CheckpointPath(const std::string& dir);

absl::Status SaveCheckpoint(const std::string& dir, torch::nn::Module& model,
                            torch::optim::Optimizer& optimizer,
                            const Progress& progress);

// Loads the checkpoint into model and optimizer; nullopt if `dir` has none.
absl::StatusOr<std::optional<Progress>> LoadCheckpoint(
    const std::string& dir, torch::nn::Module& model,
    torch::optim::Optimizer& optimizer);

}  // namespace shard::trainer

#endif  // TRAINER_CHECKPOINT_H_
