// The shard-train loop: join a job by the coordinator's address, form the
// process group through it, train a model with data-parallel SGD on the
// streamed shards of its dataset, checkpoint + commit progress, evaluate on
// the held-out set through an uneven split (every sample exactly once).
#ifndef TRAINER_TRAINER_H_
#define TRAINER_TRAINER_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "shard/client/coordinator_client.h"
#include "trainer/models.h"
#include "trainer/process_group.h"
#include "trainer/training_data.h"

namespace shard::trainer {

struct TrainerOptions {
  client::ClientOptions client;
  std::string job_id;
  std::string member_id;
  // The job's spec, as `shardctl create-job` states it (--world-size and the
  // job-spec flags): the job is created with it if it does not exist and it
  // must equal an existing job's. Its dataset_size (a mixture: each
  // source's size) is set from `data`.
  // Without it the job must exist.
  std::optional<shard::v1::JobSpec> job_spec;
  // What to train and evaluate on (--dataset, --data-path, --dataset-size,
  // --eval-size).
  DataOptions data;
  // The network (--model); default: mlp for synthetic data, cnn for images.
  std::optional<ModelKind> model;
  // Heartbeat period; must be well below the coordinator's --lease.
  absl::Duration heartbeat_interval = absl::Seconds(2);
  // How often the trainer re-joins after membership changes before giving
  // up.
  int max_rejoins = 20;
  ProcessGroupOptions process_group;
  // Train until this many epochs are complete (counting resumed ones).
  uint64_t epochs = 1;
  uint64_t batch_size = 32;
  // DataLoader threads assembling batches ahead of the training loop
  // (--loader-workers; 0: in the loop's thread). Commits stay exact: the
  // loader (ShardDataLoader) counts the batches the loop received.
  size_t loader_workers = 0;
  double learning_rate = 0.05;
  // Checkpoints go here (shared by all ranks); empty: no model checkpoints,
  // but progress is committed all the same, so a restart resumes at the
  // committed position with a freshly initialised model.
  std::string checkpoint_dir;
  // Commit (and checkpoint, with checkpoint_dir) every this many steps (0:
  // only at epoch ends).
  uint64_t checkpoint_every = 0;
  // Appends "EPOCH RANK INDEX" for every trained sample; empty: off.
  std::string log_indices;
  // How long to wait for all ranks to join.
  absl::Duration join_wait = absl::Minutes(10);
  // A progress line (step, position, samples/s, ETA) on stdout this often;
  // zero: none (the summary at the end stays). See progress_report.h.
  absl::Duration progress_every = absl::Seconds(10);
};

// Runs training to completion. Prints one progress line per epoch (with
// the time spent waiting for indices), the evaluation result ("eval ...
// samples=N unique=N accuracy=A" or "mse=E"), and "final rank=<r>
// param_checksum=<hex>", then leaves the job. FAILED_PRECONDITION when an
// existing job's dataset size differs from the data's. When the membership
// changes (a member lost or admitted, a collective fails) it re-joins, re-forms
// the process group and continues from the committed progress, reloading its
// checkpoint.
absl::Status RunTrainer(const TrainerOptions& options);

}  // namespace shard::trainer

#endif  // TRAINER_TRAINER_H_
