// The shard-train loop: join a job by the coordinator's address, form the
// process group through it, train a small model with data-parallel SGD on
// the streamed shards, checkpoint + commit progress, evaluate on an uneven
// held-out split.
#ifndef TRAINER_TRAINER_H_
#define TRAINER_TRAINER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/coordinator_client.h"
#include "trainer/process_group.h"

namespace shard::trainer {

struct TrainerOptions {
  client::ClientOptions client;
  std::string job_id;
  std::string member_id;
  // When > 0, the job is created with this world size (and dataset_size)
  // if it does not exist; when 0 the job must exist.
  uint32_t world_size = 0;
  // Samples of the synthetic training set, used to create the job.
  uint64_t dataset_size = 4096;
  // Elastic bounds used to create the job (0: world_size).
  uint32_t min_world_size = 0;
  uint32_t max_world_size = 0;
  // Heartbeat period; must be well below the coordinator's --lease.
  absl::Duration heartbeat_interval = absl::Seconds(2);
  // How often the trainer re-joins after membership changes before giving
  // up.
  int max_rejoins = 20;
  ProcessGroupOptions process_group;
  // Train until this many epochs are complete (counting resumed ones).
  uint64_t epochs = 1;
  uint64_t batch_size = 32;
  double learning_rate = 0.05;
  // Checkpoints go here (shared by all ranks); empty: no checkpoints and no
  // commits, so a restart begins at the coordinator's committed progress.
  std::string checkpoint_dir;
  // Checkpoint + commit every this many steps (0: only at epoch ends).
  uint64_t checkpoint_every = 0;
  // Appends "EPOCH RANK INDEX" for every trained sample; empty: off.
  std::string log_indices;
  // Held-out samples evaluated after training with an uneven split (job
  // "<job>-eval"); 0 skips evaluation.
  uint64_t eval_size = 1000;
  // How long to wait for all ranks to join.
  absl::Duration join_wait = absl::Minutes(10);
};

// Runs training to completion. Prints one progress line per epoch, the
// evaluation result, and "final rank=<r> param_checksum=<hex>", then leaves
// the job. When the membership changes (a member lost or admitted, a
// collective fails) it re-joins, re-forms the process group and continues
// from the committed progress, reloading its checkpoint.
absl::Status RunTrainer(const TrainerOptions& options);

}  // namespace shard::trainer

#endif  // TRAINER_TRAINER_H_
