// shard-train: a libtorch DDP trainer that joins a job knowing only the
// coordinator's address. See README "shard-train" for the flags.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cli_flags.h"
#include "client/job_spec_flags.h"
#include "client/retry_report.h"
#include "client/security_flags.h"
#include "shard/version.h"
#include "trainer/heap_reuse.h"
#include "trainer/trainer.h"

namespace {

constexpr char kUsage[] =
    "usage: shard-train --coordinator HOST:PORT --job ID [--member M]\n"
    "  [--dataset synthetic|fashion-mnist|records] [--data-path DIR]\n"
    "  [--dataset-size N] [--eval-size N] [--model linear|mlp|cnn]\n"
    "  [--backend auto|gloo|nccl] [--epochs 1] [--batch-size 32] [--lr 0.05]\n"
    "  [--loader-workers 0]\n"
    "  [--checkpoint-dir DIR] [--checkpoint-every STEPS] [--log-indices FILE]\n"
    "  [--join-wait 10m] [--pg-timeout 5m] [--gloo-interface IFACE]\n"
    "  [--heartbeat-interval 2s] [--max-rejoins 20]\n"
    "  [--tls-ca PEM] [--tls-cert PEM --tls-key PEM] [--auth-token-file FILE]\n"
    "job spec (creates the job, or must equal the existing job's):\n"
    "  [--world-size W] [--seed S] [--shuffle true|false]\n"
    "  [--tail pad|drop|uneven] [--torch-randperm legacy|2.6]\n"
    "  [--shuffle-algorithm torch|feistel|block] [--block-size B]\n"
    "  [--window-blocks K] [--min-world-size N] [--max-world-size N]\n";

// Hostname plus the local rank ($LOCAL_RANK, else 0).
std::string DefaultMember() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const char* local_rank = std::getenv("LOCAL_RANK");
  return absl::StrCat(host, "-", local_rank != nullptr ? local_rank : "0");
}

absl::StatusOr<shard::trainer::TrainerOptions> ParseOptions(
    const std::vector<std::string>& args) {
  std::set<std::string> accepted = {"coordinator",
                                    "job",
                                    "member",
                                    "world-size",
                                    "dataset",
                                    "data-path",
                                    "dataset-size",
                                    "eval-size",
                                    "model",
                                    "backend",
                                    "epochs",
                                    "batch-size",
                                    "loader-workers",
                                    "lr",
                                    "checkpoint-dir",
                                    "checkpoint-every",
                                    "log-indices",
                                    "join-wait",
                                    "pg-timeout",
                                    "gloo-interface",
                                    "heartbeat-interval",
                                    "max-rejoins"};
  shard::client::AddSecurityFlagNames(accepted);
  shard::client::AddJobSpecFlagNames(accepted);
  absl::StatusOr<shard::client::CliFlags> flags =
      shard::client::CliFlags::Parse(args, accepted);
  if (!flags.ok()) return flags.status();
  shard::trainer::TrainerOptions options;
  absl::StatusOr<std::string> coordinator = flags->String("coordinator");
  absl::StatusOr<std::string> job = flags->String("job");
  absl::StatusOr<shard::trainer::DatasetKind> dataset =
      shard::trainer::ParseDatasetKind(flags->String("dataset", "synthetic"));
  if (!dataset.ok()) return dataset.status();
  const bool synthetic = *dataset == shard::trainer::DatasetKind::kSynthetic;
  absl::StatusOr<uint64_t> world = flags->Uint64("world-size", 0);
  // Synthetic data: the size of a new job and of its evaluation set; real
  // data: the first N samples (0: all).
  absl::StatusOr<uint64_t> size =
      flags->Uint64("dataset-size", synthetic ? 4096 : 0);
  absl::StatusOr<uint64_t> eval =
      flags->Uint64("eval-size", synthetic ? 1000 : 0);
  absl::StatusOr<shard::trainer::Backend> backend =
      shard::trainer::ParseBackend(flags->String("backend", "auto"));
  absl::StatusOr<uint64_t> epochs = flags->Uint64("epochs", 1);
  absl::StatusOr<uint64_t> batch = flags->Uint64("batch-size", 32);
  absl::StatusOr<uint64_t> loader_workers = flags->Uint64("loader-workers", 0);
  absl::StatusOr<double> lr = flags->Double("lr", 0.05);
  absl::StatusOr<uint64_t> every = flags->Uint64("checkpoint-every", 0);
  absl::StatusOr<absl::Duration> join_wait =
      flags->Duration("join-wait", absl::Minutes(10));
  absl::StatusOr<absl::Duration> pg_timeout =
      flags->Duration("pg-timeout", absl::Minutes(5));
  absl::StatusOr<absl::Duration> heartbeat =
      flags->Duration("heartbeat-interval", absl::Seconds(2));
  absl::StatusOr<uint64_t> max_rejoins = flags->Uint64("max-rejoins", 20);
  for (const absl::Status& s :
       {coordinator.status(), job.status(), world.status(), size.status(),
        backend.status(), epochs.status(), batch.status(), lr.status(),
        every.status(), eval.status(), join_wait.status(), pg_timeout.status(),
        heartbeat.status(), max_rejoins.status(), loader_workers.status()}) {
    if (!s.ok()) return s;
  }
  if (*batch == 0) {
    return absl::InvalidArgumentError("--batch-size must be at least 1");
  }
  if (*loader_workers > 256) {
    return absl::InvalidArgumentError("--loader-workers must be at most 256");
  }
  if (*world > 0) {
    absl::StatusOr<shard::v1::JobSpec> spec =
        shard::client::JobSpecFromFlags(*flags, /*dataset_size=*/0, *world);
    if (!spec.ok()) return spec.status();
    options.job_spec = *spec;  // dataset_size comes from the data
  } else if (shard::client::HasJobSpecFlags(*flags)) {
    return absl::InvalidArgumentError(
        "the job-spec flags (--seed, --tail, ...) state the job's spec and "
        "need --world-size");
  }
  if (flags->Has("model")) {
    absl::StatusOr<shard::trainer::ModelKind> model =
        shard::trainer::ParseModelKind(flags->String("model", ""));
    if (!model.ok()) return model.status();
    options.model = *model;
  }
  if (*heartbeat <= absl::ZeroDuration() || *max_rejoins > 1000) {
    return absl::InvalidArgumentError(
        "--heartbeat-interval must be positive and --max-rejoins at most 1000");
  }
  options.client.address = *coordinator;
  options.client.retry.on_retrying =
      shard::client::RetryReporter("shard-train", *coordinator);
  options.client.security = shard::client::SecurityFromFlags(*flags);
  options.job_id = *job;
  options.member_id = flags->String("member", DefaultMember());
  options.heartbeat_interval = *heartbeat;
  options.max_rejoins = static_cast<int>(*max_rejoins);
  options.data.kind = *dataset;
  options.data.path = flags->String("data-path", "");
  options.data.train_size = *size;
  options.data.eval_size = *eval;
  options.process_group.backend = *backend;
  options.process_group.timeout =
      std::chrono::milliseconds(absl::ToInt64Milliseconds(*pg_timeout));
  options.process_group.gloo_interface = flags->String("gloo-interface", "");
  options.epochs = *epochs;
  options.batch_size = *batch;
  options.loader_workers = static_cast<size_t>(*loader_workers);
  options.learning_rate = *lr;
  options.checkpoint_dir = flags->String("checkpoint-dir", "");
  options.checkpoint_every = *every;
  options.log_indices = flags->String("log-indices", "");
  options.join_wait = *join_wait;
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread allocates.
  const std::string heap = shard::trainer::KeepFreedTensorMemory();
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "--version") {
    std::printf("shard-train %s\n", shard::Version().c_str());
    return 0;
  }
  if (!args.empty() && (args[0] == "--help" || args[0] == "help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  absl::StatusOr<shard::trainer::TrainerOptions> options = ParseOptions(args);
  if (!options.ok()) {
    std::fprintf(stderr, "shard-train: %s\n%s",
                 std::string(options.status().message()).c_str(), kUsage);
    return 2;
  }
  std::printf("%s\n", heap.c_str());
  absl::Status status = shard::trainer::RunTrainer(*options);
  if (!status.ok()) {
    std::fprintf(stderr, "shard-train: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
