#include "trainer/trainer.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/plan/spec/job_spec.h"
#include "shard/client/heartbeater.h"
#include "shard/client/torch/coordinator_store.h"
#include "shard/client/torch/shard_data_loader.h"
#include "shard/client/torch/shard_sampler.h"
#include "shard/client/torch/status_error.h"
#include "torch/csrc/distributed/c10d/PrefixStore.hpp"
#include "torch/torch.h"
#include "trainer/checkpoint.h"
#include "trainer/gather_uneven.h"
#include "trainer/gradient_sync.h"
#include "trainer/index_log.h"
#include "trainer/models.h"
#include "trainer/progress_report.h"
#include "trainer/source_tally.h"
#include "trainer/synthetic_dataset.h"
#include "trainer/training_data.h"

namespace shard::trainer {
namespace {

using Clock = std::chrono::steady_clock;

// The loss of a batch: cross-entropy of logits for classification, mean
// squared error for regression.
torch::Tensor Loss(Task task, const torch::Tensor& output,
                   const torch::Tensor& target) {
  if (task == Task::kClassification) {
    return torch::nn::functional::cross_entropy(output, target);
  }
  return torch::mse_loss(output, target);
}

// Per-sample evaluation scores: 1 for a correct class, 0 otherwise
// (classification), or the squared error (regression).
torch::Tensor Scores(Task task, const torch::Tensor& output,
                     const torch::Tensor& target) {
  if (task == Task::kClassification) {
    return output.argmax(1).eq(target).to(torch::kFloat32);
  }
  return (output - target).pow(2).reshape({-1});
}

// FNV-1a over every parameter's bytes, in registration order.
uint64_t ParameterChecksum(torch::nn::Module& model) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (const torch::Tensor& parameter : model.parameters()) {
    const torch::Tensor data = parameter.detach().cpu().contiguous();
    const auto* bytes = static_cast<const unsigned char*>(data.data_ptr());
    for (size_t i = 0; i < data.nbytes(); ++i) {
      hash = (hash ^ bytes[i]) * 0x100000001b3ull;
    }
  }
  return hash;
}

absl::StatusOr<client::Membership> JoinJob(
    client::CoordinatorClient& client, const TrainerOptions& options,
    const std::string& job_id, std::optional<shard::v1::JobSpec> spec) {
  return client.Join(job_id, options.member_id, spec, options.join_wait);
}

// Forms the process group in a fresh key namespace: each process adds one
// arrival, and the W arrivals of one start share the round number.
absl::StatusOr<ProcessGroupPtr> FormProcessGroup(
    std::shared_ptr<client::CoordinatorClient> client,
    const client::Membership& membership, const ProcessGroupOptions& pg_options,
    std::string* backend_name) {
  auto store = c10::make_intrusive<torch_adapter::CoordinatorStore>(
      client, membership,
      std::chrono::duration_cast<std::chrono::milliseconds>(
          pg_options.timeout));
  int64_t arrival;
  try {
    arrival = store->add("shard/process-group-arrivals", 1);
  } catch (const std::exception& e) {
    return torch_adapter::StatusOf(e).value_or(
        absl::UnavailableError(e.what()));
  }
  const int64_t round = (arrival - 1) / membership.world_size;
  auto prefixed = c10::make_intrusive<c10d::PrefixStore>(
      absl::StrCat("shard/process-group/", round), store);
  return MakeProcessGroup(prefixed, static_cast<int>(membership.rank),
                          static_cast<int>(membership.world_size), pg_options,
                          backend_name);
}

// Rank 0 writes the checkpoint (with --checkpoint-dir) and commits its
// progress to the coordinator, then prunes older checkpoints. Without a
// checkpoint directory the progress is still committed: a later run (or a
// re-join) resumes at it with the model in memory. ABORTED when the commit
// admitted new members (elastic growth): the caller re-joins.
class Checkpointer {
 public:
  Checkpointer(const TrainerOptions& options, client::CoordinatorClient& client,
               const client::Membership& membership, torch::nn::Module& model,
               torch::optim::Optimizer& optimizer)
      : options_(options),
        client_(client),
        membership_(membership),
        model_(model),
        optimizer_(optimizer) {}

  absl::Status Save(const Progress& progress) {
    if (membership_.rank != 0) return absl::OkStatus();
    const bool to_disk = !options_.checkpoint_dir.empty();
    if (to_disk) {
      if (absl::Status s = SaveCheckpoint(options_.checkpoint_dir, model_,
                                          optimizer_, progress);
          !s.ok()) {
        return s;
      }
    }
    absl::StatusOr<shard::v1::CommitProgressResponse> committed =
        client_.CommitProgress(membership_, progress.epoch, progress.position);
    if (!committed.ok()) return committed.status();
    if (to_disk) {
      PruneCheckpoints(
          options_.checkpoint_dir,
          {committed->committed_epoch(), committed->committed_position()});
    }
    if (committed->generation() != membership_.generation) {
      return absl::AbortedError(
          absl::StrCat("generation ", committed->generation(),
                       " formed at this commit (new members admitted)"));
    }
    return absl::OkStatus();
  }

 private:
  const TrainerOptions& options_;
  client::CoordinatorClient& client_;
  const client::Membership& membership_;
  torch::nn::Module& model_;
  torch::optim::Optimizer& optimizer_;
};

// Where training starts: the coordinator's committed progress, with the
// model and optimizer loaded from its checkpoint when there is one.
absl::StatusOr<Progress> ResumePoint(const TrainerOptions& options,
                                     const client::Membership& membership,
                                     torch::nn::Module& model,
                                     torch::optim::Optimizer& optimizer) {
  const Progress committed{membership.committed_epoch,
                           membership.committed_position};
  if (options.checkpoint_dir.empty()) return committed;
  absl::Status loaded =
      LoadCheckpoint(options.checkpoint_dir, committed, model, optimizer);
  if (absl::IsNotFound(loaded) && committed.epoch == 0 &&
      committed.position == 0) {
    return committed;  // A fresh job.
  }
  if (!loaded.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot resume the committed epoch ", committed.epoch,
                     " position ", committed.position, " from ",
                     options.checkpoint_dir, ": ", loaded.message()));
  }
  return committed;
}

// An ABORTED status: the membership changed, re-join and continue.
absl::Status MembershipChanged(absl::string_view what) {
  return absl::AbortedError(what);
}

// What an exception thrown during `what` means for the attempt. A
// coordinator error (StatusError) is decided by its code: the generation
// ended (ABORTED) or the coordinator is away (UNAVAILABLE, after the
// client's retries) means re-join; anything else (NOT_FOUND: the job was
// deleted, INVALID_ARGUMENT, FAILED_PRECONDITION, ...) stops the trainer
// with the coordinator's message instead of re-joining again and again.
// Other exceptions come from collectives (a peer is gone): re-join.
absl::Status FromTorchError(const std::exception& error,
                            absl::string_view what) {
  if (std::optional<absl::Status> status = torch_adapter::StatusOf(error)) {
    if (absl::IsAborted(*status) || absl::IsUnavailable(*status)) {
      return MembershipChanged(absl::StrCat(what, ": ", error.what()));
    }
    return absl::Status(status->code(),
                        absl::StrCat(what, ": ", status->message()));
  }
  return MembershipChanged(absl::StrCat(what, ": ", error.what()));
}

// Evaluates the model on the "<job>-eval" job (uneven tail: every held-out
// sample exactly once), gathers the per-sample results on every rank, then
// leaves the evaluation job.
absl::Status Evaluate(const TrainerOptions& options, const TrainingData& data,
                      const std::shared_ptr<client::CoordinatorClient>& client,
                      const client::Membership& training,
                      const ProcessGroupPtr& group,
                      torch::nn::Sequential& model, torch::Device device) {
  shard::v1::JobSpec spec;
  spec.set_dataset_size(data.eval_size());
  spec.set_world_size(training.world_size);
  spec.set_shuffle(false);
  spec.set_tail(shard::v1::TAIL_POLICY_UNEVEN);
  absl::StatusOr<client::Membership> eval =
      JoinJob(*client, options, training.job_id + "-eval", spec);
  if (!eval.ok()) return eval.status();
  // The evaluation membership needs its own heartbeats: evaluating a large
  // held-out set may take longer than a lease.
  client::Heartbeater eval_heartbeater(client, *eval,
                                       options.heartbeat_interval);
  SharedDataset held_out = data.Eval(training.spec.dataset_size());
  std::vector<int64_t> indices;
  std::vector<torch::Tensor> scores;  // One per batch, on the device.
  auto stream = client->OpenStream(*eval, 0, 0);
  std::vector<uint64_t> batch(options.batch_size);
  torch::NoGradGuard no_grad;
  while (true) {
    absl::StatusOr<size_t> got = stream->Next(absl::MakeSpan(batch));
    if (!got.ok()) return got.status();
    if (*got == 0) break;
    ExampleBatch examples = held_out.get_batch(c10::ArrayRef<size_t>(
        reinterpret_cast<const size_t*>(batch.data()), *got));
    indices.insert(indices.end(), examples.indices.begin(),
                   examples.indices.end());
    scores.push_back(Scores(
        data.task(), model->forward(ModelInput(examples.features, device)),
        examples.targets.to(device)));
  }
  // Collectives run on the group's device (CUDA for NCCL).
  torch::Tensor all_indices, all_scores;
  try {
    all_indices =
        GatherUneven(torch::tensor(indices, torch::kInt64).to(device), group)
            .cpu();
    // One tensor for the whole shard: no per-sample copy to the host.
    all_scores =
        GatherUneven(
            scores.empty()
                ? torch::empty({0},
                               torch::dtype(torch::kFloat32).device(device))
                : torch::cat(scores),
            group)
            .cpu();
  } catch (const std::exception& e) {
    return FromTorchError(e, "evaluation gather");
  }
  std::set<int64_t> unique(
      all_indices.data_ptr<int64_t>(),
      all_indices.data_ptr<int64_t>() + all_indices.numel());
  std::printf(
      "eval rank=%u local_samples=%zu samples=%lld unique=%zu %s=%.6f\n",
      training.rank, indices.size(),
      static_cast<long long>(all_indices.numel()), unique.size(),
      data.task() == Task::kClassification ? "accuracy" : "mse",
      all_scores.numel() > 0 ? all_scores.mean().item<double>() : 0.0);
  // Every rank has streamed its whole shard (the gather above needed all
  // of them), so leaving ends no one's stream, and the evaluation job is
  // free for the next trainers of this job (a later run, or members that
  // joined after this one finished).
  client->Leave(*eval).IgnoreError();
  return absl::OkStatus();
}

// One membership's training, in named steps: Join (and check the job
// against the data), FormGroup, BuildModel (weights equal on every rank,
// resumed from the committed progress), RunEpoch for each remaining epoch,
// FinishTogether (no rank leaves before the last commit), then Evaluate. Every
// step answers ABORTED when the membership changed (the caller re-joins) and
// any other error to stop. Run() once per object.
class Attempt {
 public:
  Attempt(const TrainerOptions& options, const TrainingData& data,
          std::shared_ptr<client::CoordinatorClient> client,
          IndexLog& index_log, ProgressReport& report, int number)
      : options_(options),
        data_(data),
        client_(std::move(client)),
        index_log_(index_log),
        report_(report),
        number_(number) {}

  absl::Status Run() {
    if (absl::Status s = Join(); !s.ok()) return s;
    if (absl::Status s = FormGroup(); !s.ok()) return s;
    if (absl::Status s = BuildModel(); !s.ok()) return s;
    // Loader workers run ahead of the training loop: the loader counts the
    // batches the loop received.
    auto loader = torch_adapter::MakeShardDataLoader(
        data_.Train(membership_.spec.dataset_size()),
        torch_adapter::ShardSampler(client_, membership_),
        torch::data::DataLoaderOptions()
            .batch_size(options_.batch_size)
            .workers(options_.loader_workers));
    loader->progress().ResumeAt({start_.epoch, start_.position});
    for (uint64_t epoch = start_.epoch; epoch < options_.epochs; ++epoch) {
      if (absl::Status s = RunEpoch(epoch, *loader, loader->progress());
          !s.ok()) {
        return s;
      }
    }
    if (absl::Status s = FinishTogether(); !s.ok()) return s;
    if (data_.eval_size() > 0) {
      if (absl::Status s = Evaluate(options_, data_, client_, membership_,
                                    group_, model_, device_);
          !s.ok()) {
        return s;
      }
    }
    std::printf("final rank=%u param_checksum=%016llx\n", membership_.rank,
                static_cast<unsigned long long>(ParameterChecksum(*model_)));
    client_->Leave(membership_).IgnoreError();
    return absl::OkStatus();
  }

 private:
  // Joins (creating the job from --job-spec flags sized to the data) and
  // starts heartbeating; FAILED_PRECONDITION when the job does not fit the
  // training data.
  absl::Status Join() {
    // An existing job is checked before the join waits for the world.
    absl::StatusOr<shard::v1::Job> existing = client_->GetJob(options_.job_id);
    if (existing.ok()) {
      absl::Status fits = data_.CheckFits(options_.job_id, existing->spec());
      if (!fits.ok()) return fits;
    } else if (!absl::IsNotFound(existing.status())) {
      return existing.status();
    }
    std::optional<shard::v1::JobSpec> spec = options_.job_spec;
    if (spec) data_.SizeSpec(*spec);
    absl::StatusOr<client::Membership> joined =
        JoinJob(*client_, options_, options_.job_id, spec);
    if (!joined.ok()) return joined.status();
    membership_ = *joined;
    // Again: the job may have been created meanwhile (by another rank).
    if (absl::Status fits =
            data_.CheckFits(membership_.job_id, membership_.spec);
        !fits.ok()) {
      client_->Leave(membership_).IgnoreError();
      return fits;
    }
    if (membership_.spec.sources_size() > 0) {
      std::printf(
          "mixture job=%s epoch_size=%llu per epoch: %s\n",
          membership_.job_id.c_str(),
          static_cast<unsigned long long>(membership_.spec.epoch_size()),
          PlannedPerSource(membership_.spec).c_str());
    }
    heartbeater_ = std::make_unique<client::Heartbeater>(
        client_, membership_, options_.heartbeat_interval);
    return absl::OkStatus();
  }

  // Forms the process group through the coordinator's store.
  absl::Status FormGroup() {
    absl::StatusOr<ProcessGroupPtr> group = FormProcessGroup(
        client_, membership_, options_.process_group, &backend_);
    if (!group.ok()) {
      // A backend this build or host lacks (FAILED_PRECONDITION) and a
      // deleted job (NOT_FOUND) stop the trainer; any other failure (a
      // peer gone, the generation ended while forming) means the
      // membership changed.
      if (absl::IsFailedPrecondition(group.status()) ||
          absl::IsNotFound(group.status())) {
        return group.status();
      }
      return MembershipChanged(group.status().message());
    }
    group_ = *std::move(group);
    device_ = DeviceFor(backend_, static_cast<int>(membership_.rank));
    std::printf(
        "joined job=%s member=%s rank=%u world_size=%u generation=%llu "
        "backend=%s attempt=%d log_lines=%llu\n",
        membership_.job_id.c_str(), membership_.member_id.c_str(),
        membership_.rank, membership_.world_size,
        static_cast<unsigned long long>(membership_.generation),
        backend_.c_str(), number_,
        static_cast<unsigned long long>(index_log_.lines()));
    return absl::OkStatus();
  }

  // The model and optimizer, loaded from the checkpoint of the committed
  // progress (if any) and then broadcast from rank 0, with the gradient
  // sync and the checkpointer that go with them.
  absl::Status BuildModel() {
    // Ranks start from different weights on purpose: the broadcast below
    // (or the shared checkpoint) must make them equal.
    torch::manual_seed(1000 + membership_.rank);
    const ModelKind kind = options_.model.value_or(
        data_.task() == Task::kClassification ? ModelKind::kCnn
                                              : ModelKind::kMlp);
    absl::StatusOr<torch::nn::Sequential> made =
        MakeModel(kind, data_.example_shape(), data_.outputs());
    if (!made.ok()) return made.status();
    model_ = *made;
    PlaceModel(model_, device_);
    optimizer_ = std::make_unique<torch::optim::SGD>(
        model_->parameters(),
        torch::optim::SGDOptions(options_.learning_rate).momentum(0.9));
    absl::StatusOr<Progress> start =
        ResumePoint(options_, membership_, *model_, *optimizer_);
    if (!start.ok()) return start.status();
    start_ = *start;
    std::printf("resuming rank=%u epoch=%llu position=%llu\n", membership_.rank,
                static_cast<unsigned long long>(start_.epoch),
                static_cast<unsigned long long>(start_.position));
    std::fflush(stdout);
    try {
      BroadcastParameters(model_->parameters(), group_);
    } catch (const std::exception& e) {
      return FromTorchError(e, "broadcast");
    }
    sync_ = std::make_unique<GradientSync>(model_->parameters(), group_);
    checkpointer_ = std::make_unique<Checkpointer>(
        options_, *client_, membership_, *model_, *optimizer_);
    return absl::OkStatus();
  }

  // Returns once every rank finished training, i.e. once rank 0's last
  // commit (the end of the last epoch) was answered: a rank that left
  // before would end the generation under that commit (ABORTED, and the
  // run's last epoch lost from the committed progress).
  absl::Status FinishTogether() {
    try {
      WaitForAllRanks(group_, device_);
    } catch (const std::exception& e) {
      return FromTorchError(e, "the end-of-training barrier");
    }
    return absl::OkStatus();
  }

  // Trains one epoch from the loader, checkpointing every
  // --checkpoint-every steps and at the end (which commits the next
  // epoch's start).
  template <typename Loader>
  absl::Status RunEpoch(uint64_t epoch, Loader& loader,
                        torch_adapter::ShardSamplerProgress& progress) {
    uint64_t samples = 0, steps = 0;
    // Where this epoch's positions end in the current world, and a whole
    // epoch's length (for the progress line).
    const uint64_t epoch_base = epoch == start_.epoch ? start_.position : 0;
    const uint64_t epoch_end =
        plan::LayoutOf(membership_.spec,
                       {plan::EpochLink{epoch_base, membership_.world_size}})
            .total();
    const uint64_t epoch_length =
        plan::LayoutOf(membership_.spec,
                       {plan::EpochLink{0, membership_.world_size}})
            .total();
    torch::Tensor loss_sum =
        torch::zeros({}, torch::dtype(torch::kFloat64).device(device_));
    const Clock::time_point began = Clock::now();
    const absl::Duration index_wait_before = progress.IndexWait();
    SourceTally per_source(membership_.spec);
    try {
      for (ExampleBatch& batch : loader) {
        // ABORTED: the generation ended (re-join); anything else (NOT_FOUND:
        // the job was deleted) stops the trainer.
        if (absl::Status s = heartbeater_->status(); !s.ok()) {
          return absl::Status(
              s.code(), absl::StrCat("heartbeat of job ", membership_.job_id,
                                     ": ", s.message()));
        }
        const torch::Tensor x = ModelInput(batch.features, device_);
        const torch::Tensor y = batch.targets.to(device_);
        // Logged before the step's collective: once any rank is past it
        // (and may commit it), every rank has logged the step.
        index_log_.Write(epoch, membership_.rank, batch.indices);
        sync_->Prepare();
        optimizer_->zero_grad();
        torch::Tensor loss = Loss(data_.task(), model_->forward(x), y);
        loss.backward();
        sync_->Finish();
        optimizer_->step();
        samples += batch.size();
        ++steps;
        // Summed where the loss is: reading it every step would wait for
        // the device each step.
        loss_sum += loss.detach();
        per_source.Add(batch.indices);
        // The position includes this step's batch (the loop received it).
        const torch_adapter::EpochPosition at = progress.Current();
        report_.Step(membership_.rank, epoch, at.position, epoch_end,
                     epoch_length, batch.size());
        // The epoch's last step is covered by the epoch-end checkpoint:
        // progress is never recorded as the end of an epoch, only as the
        // next one's start.
        if (options_.checkpoint_every > 0 &&
            steps % options_.checkpoint_every == 0 && at.position < epoch_end) {
          if (absl::Status s = checkpointer_->Save({at.epoch, at.position});
              !s.ok()) {
            return s;
          }
        }
      }
    } catch (const std::exception& e) {
      // A collective fails when a peer is gone; the stream fails when the
      // generation ended (both: re-join), or the job is gone (stop).
      return FromTorchError(e, absl::StrCat("training epoch ", epoch));
    }
    if (progress.Current().epoch != epoch) {
      return absl::InternalError(absl::StrCat("sampler served epoch ",
                                              progress.Current().epoch,
                                              " while training epoch ", epoch));
    }
    const double seconds =
        std::chrono::duration<double>(Clock::now() - began).count();
    const double index_wait =
        absl::ToDoubleSeconds(progress.IndexWait() - index_wait_before);
    std::printf(
        "epoch %llu rank=%u steps=%llu samples=%llu loss=%.6f "
        "samples_per_s=%.0f seconds=%.3f index_wait_s=%.4f\n",
        static_cast<unsigned long long>(epoch), membership_.rank,
        static_cast<unsigned long long>(steps),
        static_cast<unsigned long long>(samples),
        steps > 0 ? loss_sum.item<double>() / steps : 0.0,
        seconds > 0 ? samples / seconds : 0.0, seconds, index_wait);
    if (per_source.mixture()) {
      std::printf("epoch %llu rank=%u trained per source: %s\n",
                  static_cast<unsigned long long>(epoch), membership_.rank,
                  per_source.Line().c_str());
    }
    std::fflush(stdout);
    return checkpointer_->Save({epoch + 1, 0});
  }

  const TrainerOptions& options_;
  const TrainingData& data_;
  const std::shared_ptr<client::CoordinatorClient> client_;
  IndexLog& index_log_;
  ProgressReport& report_;
  const int number_;
  // Set by the steps, in order.
  client::Membership membership_;
  std::unique_ptr<client::Heartbeater> heartbeater_;
  ProcessGroupPtr group_;
  std::string backend_;
  torch::Device device_ = torch::kCPU;
  torch::nn::Sequential model_{nullptr};
  std::unique_ptr<torch::optim::SGD> optimizer_;
  Progress start_;
  std::unique_ptr<GradientSync> sync_;
  std::unique_ptr<Checkpointer> checkpointer_;
};

}  // namespace

absl::Status RunTrainer(const TrainerOptions& options) {
  absl::StatusOr<TrainingData> data = TrainingData::Load(options.data);
  if (!data.ok()) return data.status();
  std::printf("data: %s\n", data->description().c_str());
  std::fflush(stdout);
  auto connected = client::CoordinatorClient::Connect(options.client);
  if (!connected.ok()) return connected.status();
  std::shared_ptr<client::CoordinatorClient> client = *std::move(connected);
  std::FILE* file = nullptr;
  if (!options.log_indices.empty()) {
    file = std::fopen(options.log_indices.c_str(), "a");
    if (file == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot open --log-indices ", options.log_indices));
    }
  }
  IndexLog index_log(file);
  ProgressReport report(stdout, options.progress_every, options.epochs);
  absl::Status status;
  for (int attempt = 0; attempt <= options.max_rejoins; ++attempt) {
    try {
      status =
          Attempt(options, *data, client, index_log, report, attempt).Run();
    } catch (const std::exception& e) {
      // libtorch throws; one that escapes the attempt is a bug, reported as
      // an error rather than std::terminate.
      return absl::InternalError(absl::StrCat("trainer: ", e.what()));
    }
    if (status.ok()) report.Summary();
    if (!absl::IsAborted(status)) return status;
    std::printf("membership changed (%s): re-joining\n",
                std::string(status.message()).c_str());
    std::fflush(stdout);
  }
  return absl::AbortedError(absl::StrCat("gave up after ", options.max_rejoins,
                                         " re-joins: ", status.message()));
}

}  // namespace shard::trainer
