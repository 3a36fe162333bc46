// shard-train: a libtorch DDP trainer that joins a job knowing only the
// coordinator's address. See docs/reference.md "shard-train" for the flags.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/job_spec_flags.h"
#include "client/progress_lines.h"
#include "client/security_flags.h"
#include "common/cli/command_line.h"
#include "common/plan/mixtures/mixture.h"
#include "common/plan/spec/job_spec.h"
#include "shard/version.h"
#include "trainer/heap_reuse.h"
#include "trainer/trainer.h"

namespace {

// Hostname plus the local rank ($LOCAL_RANK, else 0); under torchrun also
// the agent's process id.
std::string DefaultMember() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const char* local_rank = std::getenv("LOCAL_RANK");
  const std::string local = local_rank != nullptr ? local_rank : "0";
  // A torchrun worker: its agent's process id tells the workers of two
  // agents on one host apart (their LOCAL_RANKs are the same).
  if (std::getenv("TORCHELASTIC_RUN_ID") != nullptr) {
    return absl::StrCat(host, "-", getppid(), "-", local);
  }
  return absl::StrCat(host, "-", local);
}

// The command line's values, before they are checked and turned into
// TrainerOptions.
struct Flags {
  std::string dataset;  // empty: synthetic, or records with --source
  std::string model;    // empty: the dataset's default
  std::string backend = "auto";
  uint64_t world_size = 0;
  // Synthetic data: the size of a new job and of its evaluation set; real
  // data: the first N samples (0: all). Unset: 4096 and 1000 for synthetic
  // data, all for real data.
  std::optional<uint64_t> dataset_size;
  std::optional<uint64_t> eval_size;
  absl::Duration pg_timeout = absl::Minutes(5);
  shard::client::JobSpecFlags spec;
  // A mixture: "NAME:PATH[:weight=W|repeat=R|choose=C]" each, and the
  // epoch size of weighted sources.
  std::vector<std::string> sources;
  uint64_t epoch_size = 0;
};

constexpr char kSourceSyntax[] = "NAME:PATH[:weight=W|repeat=R|choose=C]";

// --source and --epoch-size (a job-spec option).
void AddMixtureOptions(CLI::App& app, Flags& flags) {
  CLI::Option* sources =
      shard::cli::AddOption(
          app, "--source", flags.sources,
          absl::StrCat("a source of a mixture of record files, ", kSourceSyntax,
                       " (repeatable, in dataset order; PATH: a record file or "
                       "a directory of *.rec); see docs/mixtures.md"))
          ->type_name("SOURCE");
  shard::cli::AddOption(app, "--epoch-size", flags.epoch_size,
                        "samples per epoch of a mixture whose sources have "
                        "weights")
      ->needs(sources)
      ->group("Job spec");
}

void AddOptions(CLI::App& app, Flags& flags,
                shard::trainer::TrainerOptions& options) {
  shard::cli::AddOption(
      app, "--coordinator", options.client.address,
      "the coordinator's HOST:PORT, or the replicas' as a comma-"
      "separated list")
      ->type_name("HOST:PORT[,...]")
      ->envname("SHARD_COORDINATOR")
      ->check(shard::cli::AddressCheck(shard::net::AddressUse::kDial,
                                       /*list=*/true))
      ->required();
  shard::cli::AddOption(app, "--job", options.job_id, "job id")->required();
  shard::cli::AddOption(app, "--member", options.member_id,
                        "member id (unique per process)")
      ->default_str("HOSTNAME-$LOCAL_RANK");
  shard::cli::AddOption(app, "--dataset", flags.dataset, "training data")
      ->check(CLI::IsMember({"synthetic", "fashion-mnist", "records"}))
      ->default_str("synthetic; records with --source");
  shard::cli::AddOption(app, "--data-path", options.data.path,
                        "directory of fashion-mnist, or of the records' "
                        "train/ and test/ (with --source: test/ only)");
  shard::cli::AddOption(
      app, "--dataset-size", flags.dataset_size,
      "synthetic: samples of a new job (default 4096); real data: "
      "the first N samples (default all)");
  shard::cli::AddOption(
      app, "--eval-size", flags.eval_size,
      "evaluation samples (synthetic default 1000; real data: "
      "all of the test set)");
  shard::cli::AddOption(
      app, "--model", flags.model,
      "network (default: mlp for synthetic data, cnn for images)")
      ->check(CLI::IsMember({"linear", "mlp", "cnn"}));
  shard::cli::AddOption(app, "--backend", flags.backend,
                        "process group: gloo (CPU), nccl (GPU) or auto")
      ->check(CLI::IsMember({"auto", "gloo", "nccl"}));
  shard::cli::AddOption(app, "--epochs", options.epochs, "epochs to train");
  shard::cli::AddOption(app, "--batch-size", options.batch_size,
                        "samples per step")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  shard::cli::AddOption(app, "--loader-workers", options.loader_workers,
                        "threads preparing batches (0: in the training loop)")
      ->check(CLI::Range(0, 256));
  shard::cli::AddOption(app, "--lr", options.learning_rate, "learning rate");
  shard::cli::AddOption(
      app, "--checkpoint-dir", options.checkpoint_dir,
      "directory for checkpoints, shared by all ranks (empty: none)");
  shard::cli::AddOption(
      app, "--checkpoint-every", options.checkpoint_every,
      "steps between checkpoints (0: at the end of each epoch)");
  shard::cli::AddOption(
      app, "--log-indices", options.log_indices,
      "append \"EPOCH RANK INDEX\" per trained sample to FILE");
  shard::cli::AddDuration(app, "--join-wait", &options.join_wait,
                          "how long to wait for the world to form");
  shard::cli::AddDuration(app, "--progress-every", &options.progress_every,
                          "a progress line (step, samples/s, ETA) this often; "
                          "0: none");
  shard::cli::AddDuration(app, "--pg-timeout", &flags.pg_timeout,
                          "timeout of the process group's collectives");
  shard::cli::AddOption(
      app, "--gloo-interface", options.process_group.gloo_interface,
      "network interface Gloo binds (empty: the host name's)");
  shard::cli::AddDuration(app, "--heartbeat-interval",
                          &options.heartbeat_interval,
                          "heartbeat period (well below shardd's --lease)");
  shard::cli::AddOption(app, "--max-rejoins", options.max_rejoins,
                        "generations this process may re-join before giving up")
      ->check(CLI::Range(0, 1000));
  shard::client::AddSecurityOptions(app, &options.client.security);
  shard::cli::AddOption(
      app, "--world-size", flags.world_size,
      "ranks; with it shard-train creates the job (or checks that "
      "the existing one has this spec)",
      shard::plan::kMaxWorldSize)
      ->group("Job spec");
  AddMixtureOptions(app, flags);
  shard::client::AddJobSpecOptions(app, &flags.spec);
}

// A mixture's --source options: the files in options.data.sources, the
// names and shares in the spec's sources (sized from the files when the
// job is created).
absl::Status FinishSources(const Flags& flags,
                           shard::trainer::TrainerOptions& options) {
  if (flags.dataset != "records") {
    return absl::InvalidArgumentError(
        "--source trains on record files: leave out --dataset or give "
        "--dataset records");
  }
  if (flags.dataset_size) {
    return absl::InvalidArgumentError(
        "--dataset-size takes the first N samples; a mixture trains on "
        "its sources whole");
  }
  bool spec_given = flags.epoch_size > 0;
  std::vector<shard::v1::Source> spec_sources;
  for (const std::string& text : flags.sources) {
    absl::StatusOr<shard::client::SourceOption> option =
        shard::client::ParseSourceOption(text, kSourceSyntax);
    if (!option.ok()) return option.status();
    options.data.sources.push_back({option->source.name(), option->value});
    spec_given |=
        option->source.share_case() != shard::v1::Source::SHARE_NOT_SET;
    spec_sources.push_back(std::move(option->source));
  }
  shard::v1::JobSpec named;  // The sources without their sizes.
  for (const shard::v1::Source& source : spec_sources) {
    *named.add_sources() = source;
  }
  if (absl::Status s = shard::plan::CheckSourceNamesAndShares(named); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--source: ", s.message()));
  }
  if (!options.job_spec) {
    if (!spec_given) return absl::OkStatus();
    return absl::InvalidArgumentError(
        "the shares of --source and --epoch-size state the job's spec and "
        "need --world-size");
  }
  for (shard::v1::Source& source : spec_sources) {
    *options.job_spec->add_sources() = std::move(source);
  }
  options.job_spec->set_epoch_size(flags.epoch_size);
  return absl::OkStatus();
}

// Checks what CLI11 cannot and completes `options`.
absl::Status FinishOptions(Flags& flags,
                           shard::trainer::TrainerOptions& options) {
  if (flags.dataset.empty()) {
    flags.dataset = flags.sources.empty() ? "synthetic" : "records";
  }
  absl::StatusOr<shard::trainer::DatasetKind> dataset =
      shard::trainer::ParseDatasetKind(flags.dataset);
  if (!dataset.ok()) return dataset.status();
  const bool synthetic = *dataset == shard::trainer::DatasetKind::kSynthetic;
  options.data.kind = *dataset;
  if (*dataset == shard::trainer::DatasetKind::kRecords &&
      flags.sources.empty() && options.data.path.empty()) {
    return absl::InvalidArgumentError(
        "--dataset records needs --data-path: the directory holding the "
        "record files' train/ and test/");
  }
  if (!(options.learning_rate > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--lr: \"", options.learning_rate,
                     "\" is not a learning rate; give a number above 0, "
                     "e.g. 0.05"));
  }
  options.data.train_size = flags.dataset_size.value_or(synthetic ? 4096 : 0);
  options.data.eval_size = flags.eval_size.value_or(synthetic ? 1000 : 0);
  absl::StatusOr<shard::trainer::Backend> backend =
      shard::trainer::ParseBackend(flags.backend);
  if (!backend.ok()) return backend.status();
  options.process_group.backend = *backend;
  // Shorter, every collective times out and each re-join fails again.
  if (flags.pg_timeout < absl::Seconds(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--pg-timeout ", absl::FormatDuration(flags.pg_timeout),
                     " is below 1s: every collective would time out"));
  }
  options.process_group.timeout =
      std::chrono::milliseconds(absl::ToInt64Milliseconds(flags.pg_timeout));
  if (options.heartbeat_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--heartbeat-interval must be positive");
  }
  if (!flags.model.empty()) {
    absl::StatusOr<shard::trainer::ModelKind> model =
        shard::trainer::ParseModelKind(flags.model);
    if (!model.ok()) return model.status();
    options.model = *model;
  }
  if (flags.world_size > 0) {
    absl::StatusOr<shard::v1::JobSpec> spec = shard::client::JobSpecFromFlags(
        flags.spec, /*dataset_size=*/0, flags.world_size);
    if (!spec.ok()) return spec.status();
    options.job_spec = *spec;  // dataset_size comes from the data
  } else if (flags.spec.AnyGiven()) {
    return absl::InvalidArgumentError(
        "the job-spec options (--seed, --tail, ...) state the job's spec and "
        "need --world-size");
  }
  if (!flags.sources.empty()) {
    if (absl::Status s = FinishSources(flags, options); !s.ok()) return s;
  }
  if (options.member_id.empty()) options.member_id = DefaultMember();
  options.client.retry.on_retrying =
      shard::client::RetryReporter("shard-train", options.client.address);
  options.client.on_waiting = shard::client::WaitingReporter("shard-train");
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread allocates.
  const std::string heap = shard::trainer::KeepFreedTensorMemory();
  CLI::App app(
      "A libtorch DDP trainer that joins a job knowing only the "
      "coordinator's address; see docs/reference.md \"shard-train\".");
  shard::cli::Configure(app, "shard-train");
  Flags flags;
  shard::trainer::TrainerOptions options;
  AddOptions(app, flags, options);
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  if (absl::Status status = FinishOptions(flags, options); !status.ok()) {
    std::fprintf(stderr,
                 "shard-train: %s\nRun 'shard-train --help' for the "
                 "options.\n",
                 std::string(status.message()).c_str());
    return shard::cli::kExitUsage;
  }
  std::printf("%s\n", heap.c_str());
  absl::Status status = shard::trainer::RunTrainer(options);
  if (!status.ok()) {
    std::fprintf(stderr, "shard-train: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
