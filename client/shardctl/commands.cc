#include "client/shardctl/commands.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "client/job_spec_flags.h"
#include "client/shardctl/batch_plan.h"
#include "client/shardctl/costs_file.h"
#include "client/shardctl/job_warnings.h"
#include "common/cli/command_line.h"
#include "common/plan/batches/cost_digest.h"
#include "common/plan/batches/cost_table.h"
#include "common/plan/mixtures/mixture.h"
#include "common/plan/spec/job_spec.h"
#include "shard/client/heartbeater.h"

namespace shard::shardctl {
namespace {

// Buffers text and writes it to stdout in large blocks.
class StdoutBuffer {
 public:
  ~StdoutBuffer() { Flush(); }
  std::string& text() { return text_; }
  void MaybeFlush() {
    if (text_.size() >= (1 << 16)) Flush();
  }
  void Flush() {
    std::fwrite(text_.data(), 1, text_.size(), stdout);
    text_.clear();
  }

 private:
  std::string text_;
};

struct CreateJobFlags {
  std::string job;
  uint64_t size = 0;
  uint64_t world_size = 0;
  std::vector<std::string> sources;
  uint64_t epoch_size = 0;
  client::JobSpecFlags spec;
  // Balanced batches (docs/balanced-batches.md): one file, or a mixture's
  // one per source.
  std::vector<std::string> costs_files;
  std::string costs_format = "auto";
  uint64_t batch_tokens = 0;
  uint64_t batch_size = 0;
  std::string cost_model = "padded";
  uint64_t batch_window = 0;
  uint64_t attention_length = 0;
};

// Adds the balanced-batch options of create-job to `app`.
void AddBatchOptions(CLI::App& app, CreateJobFlags& flags) {
  CLI::Option* costs = cli::AddOption(
      app, "--costs", flags.costs_files,
      "balanced batches: one cost per sample (e.g. its length in tokens), a "
      "NumPy .npy of an unsigned integer type or raw little-endian u16/u32 "
      "(see --costs-format); needs --batch-tokens or --batch-size. A "
      "mixture: once per --source, in order, or once for all its samples");
  cli::AddOption(app, "--costs-format", flags.costs_format,
                 "auto (.npy by its magic), npy, u16 or u32")
      ->check(CLI::IsMember({"auto", "npy", "u16", "u32"}))
      ->needs(costs);
  CLI::Option* tokens =
      cli::AddOption(app, "--batch-tokens", flags.batch_tokens,
                     "cost budget per micro-batch (with --attention-length: "
                     "a cap on its tokens)")
          ->needs(costs);
  CLI::Option* size = cli::AddOption(app, "--batch-size", flags.batch_size,
                                     "samples per micro-batch (instead of "
                                     "--batch-tokens)")
                          ->needs(costs);
  tokens->excludes(size);
  cli::AddOption(app, "--cost-model", flags.cost_model,
                 "padded (count x longest) or sum")
      ->check(CLI::IsMember({"padded", "sum"}))
      ->needs(costs);
  cli::AddOption(app, "--batch-window", flags.batch_window,
                 "samples balanced together (0: the default, 65,536, or with "
                 "--batch-tokens the samples of 256 steps at the costs' mean, "
                 "up to 2^22; see docs/balanced-batches.md)")
      ->needs(costs);
  cli::AddOption(app, "--attention-length", flags.attention_length,
                 "packed sequences under two budgets: --batch-tokens caps "
                 "each micro-batch's tokens and the steps are balanced by "
                 "L + L^2 / D (needs --cost-model sum; 0: by tokens)",
                 plan::kMaxAttentionLength)
      ->needs(tokens);
}

// Uploads --costs and names them in `spec`'s balanced batches.
absl::Status AddBatches(const CreateJobFlags& flags,
                        client::CoordinatorClient& client,
                        shard::v1::JobSpec& spec) {
  if (flags.costs_files.empty()) return absl::OkStatus();
  if (flags.batch_tokens == 0 && flags.batch_size == 0) {
    return absl::InvalidArgumentError(
        "--costs needs --batch-tokens or --batch-size");
  }
  absl::StatusOr<std::string> le32 =
      ReadDatasetCosts(flags.costs_files, flags.costs_format, spec);
  if (!le32.ok()) return le32.status();
  const std::string sha256 = plan::Sha256Hex(*le32);
  if (absl::Status s = client.PutCosts(sha256, *le32); !s.ok()) return s;
  shard::v1::BatchPolicy& batches = *spec.mutable_batches();
  batches.set_batch_tokens(flags.batch_tokens);
  batches.set_batch_size(flags.batch_size);
  batches.set_cost_model(flags.cost_model == "sum"
                             ? shard::v1::BATCH_COST_MODEL_SUM
                             : shard::v1::BATCH_COST_MODEL_PADDED);
  batches.set_window(flags.batch_window);
  batches.set_attention_length(flags.attention_length);
  batches.set_costs_sha256(sha256);
  batches.set_costs_total(plan::CostsTotal(*le32));
  return absl::OkStatus();
}

// The spec the create-job options describe: a plain job of --size samples
// or a mixture of the --source options.
absl::StatusOr<shard::v1::JobSpec> CreateJobSpec(const CreateJobFlags& flags) {
  if (flags.size == 0 && flags.sources.empty()) {
    return absl::InvalidArgumentError(
        "give --size N, or the sources of a mixture with --source");
  }
  absl::StatusOr<shard::v1::JobSpec> spec =
      client::JobSpecFromFlags(flags.spec, flags.size, flags.world_size);
  if (!spec.ok()) return spec.status();
  for (const std::string& text : flags.sources) {
    absl::StatusOr<shard::v1::Source> source = client::ParseSizedSource(text);
    if (!source.ok()) return source.status();
    *spec->add_sources() = *std::move(source);
  }
  spec->set_epoch_size(flags.epoch_size);
  return spec;
}

// "job J: dataset_size=N world_size=W samples_per_rank=S" (balanced
// batches: the policy and the costs' digest instead of the count), and for a
// mixture its epoch size and each source's samples per epoch; warnings on
// stderr.
void PrintCreatedJob(const shard::v1::Job& job) {
  std::printf(
      "job %s: dataset_size=%llu world_size=%u %s\n", job.job_id().c_str(),
      static_cast<unsigned long long>(job.spec().dataset_size()),
      job.spec().world_size(),
      job.spec().has_batches()
          ? absl::StrCat(plan::DescribeBatchPolicy(job.spec()),
                         " costs=", job.spec().batches().costs_sha256())
                .c_str()
          : absl::StrCat("samples_per_rank=", job.samples_per_rank()).c_str());
  PrintJobWarnings(job);
  if (job.spec().sources_size() == 0) return;
  std::printf("epoch_size=%llu\n",
              static_cast<unsigned long long>(job.spec().epoch_size()));
  for (int k = 0; k < job.spec().sources_size() && k < job.source_counts_size();
       ++k) {
    std::printf("source %s: size=%llu per_epoch=%llu\n",
                job.spec().sources(k).name().c_str(),
                static_cast<unsigned long long>(job.spec().sources(k).size()),
                static_cast<unsigned long long>(job.source_counts(k)));
  }
}

// "PREFIX INDEX" per index of the stream.
absl::Status PrintIndices(client::ShardStream& stream,
                          const std::string& prefix, StdoutBuffer& out) {
  std::vector<uint64_t> batch(4096);
  while (true) {
    absl::StatusOr<size_t> got = stream.Next(absl::MakeSpan(batch));
    if (!got.ok()) return got.status();
    if (*got == 0) return absl::OkStatus();
    for (size_t i = 0; i < *got; ++i) {
      absl::StrAppend(&out.text(), prefix, batch[i], "\n");
    }
    out.MaybeFlush();
  }
}

// "PREFIX STEP_END: INDEX INDEX ..." per micro-batch of the stream.
absl::Status PrintBatches(client::ShardStream& stream,
                          const std::string& prefix, StdoutBuffer& out) {
  while (true) {
    absl::StatusOr<std::optional<client::MicroBatch>> batch =
        stream.NextBatch();
    if (!batch.ok()) return batch.status();
    if (!batch->has_value()) return absl::OkStatus();
    absl::StrAppend(&out.text(), prefix, (*batch)->step_end, ":");
    for (uint64_t index : (*batch)->indices) {
      absl::StrAppend(&out.text(), " ", index);
    }
    out.text() += "\n";
    out.MaybeFlush();
  }
}

}  // namespace

Command AddCreateJob(CLI::App& shardctl) {
  auto flags = std::make_shared<CreateJobFlags>();
  CLI::App* app = shardctl.add_subcommand(
      "create-job", "create a job (or check that an existing one is equal)");
  cli::AddOption(*app, "--job", flags->job, "job id")->required();
  CLI::Option* size = cli::AddOption(*app, "--size", flags->size,
                                     "samples in the dataset (not a mixture)");
  CLI::Option* sources =
      cli::AddOption(*app, "--source", flags->sources,
                     "a source of a mixture, NAME:SIZE[:weight=W|repeat=R|"
                     "choose=C] (repeatable, in dataset order; no share: "
                     "repeat=1); see docs/mixtures.md")
          ->type_name("SOURCE");
  size->excludes(sources);
  cli::AddOption(*app, "--epoch-size", flags->epoch_size,
                 "samples per epoch of a mixture whose sources have weights")
      ->needs(sources);
  cli::AddOption(*app, "--world-size", flags->world_size, "ranks (members)",
                 plan::kMaxWorldSize)
      ->required();
  client::AddJobSpecOptions(*app, &flags->spec);
  AddBatchOptions(*app, *flags);
  return {app,
          Connected(
              [flags](const std::shared_ptr<client::CoordinatorClient>& client,
                      const client::ClientOptions&) -> absl::Status {
                absl::StatusOr<shard::v1::JobSpec> spec = CreateJobSpec(*flags);
                if (!spec.ok()) return spec.status();
                if (absl::Status s = AddBatches(*flags, *client, *spec);
                    !s.ok()) {
                  return s;
                }
                absl::StatusOr<shard::v1::Job> created =
                    client->CreateJob(flags->job, *spec);
                if (!created.ok()) return created.status();
                PrintCreatedJob(*created);
                return absl::OkStatus();
              })};
}

namespace {

struct PlanFlags {
  std::string job;
  uint64_t epoch = 0;
  uint32_t rank = 0;
  bool by_source = false;
  // Balanced batches: the job's costs, and the balance figures instead of
  // a rank's micro-batches.
  std::vector<std::string> costs_files;
  std::string costs_format = "auto";
  bool balance = false;
};

// The plan of a job with balanced batches, computed here (batch_plan.h).
absl::Status PrintPlanOfBatches(client::CoordinatorClient& client,
                                const PlanFlags& flags) {
  absl::StatusOr<shard::v1::Job> job = client.GetJob(flags.job);
  if (!job.ok()) return job.status();
  if (!job->spec().has_batches()) {
    return absl::FailedPreconditionError(
        absl::StrCat("job ", flags.job,
                     " has no balanced batches: --costs and --balance are "
                     "for jobs with batch_tokens or batch_size"));
  }
  if (flags.costs_files.empty()) {
    return absl::InvalidArgumentError(
        "--balance needs --costs FILE (the costs the job was created with)");
  }
  return PrintBatchPlan(
      job->spec(), BatchPlanRequest{flags.epoch, flags.rank, flags.costs_files,
                                    flags.costs_format, flags.balance});
}

// Calls `each` with every index of the rank's shard of the epoch, in order,
// reading the preview a page at a time.
absl::Status ForEachPlannedIndex(client::CoordinatorClient& client,
                                 const PlanFlags& flags,
                                 absl::FunctionRef<void(uint64_t)> each) {
  // Pages sized by bytes, not counts: near N = 2^62 every index takes 9
  // bytes on the wire.
  constexpr uint32_t kPage = client::CoordinatorClient::kMaxPreviewPage;
  uint64_t offset = 0;
  while (true) {
    absl::StatusOr<shard::v1::PreviewShardResponse> page =
        client.Preview(flags.job, flags.rank, flags.epoch, offset, kPage);
    if (!page.ok()) return page.status();
    for (uint64_t index : page->indices()) each(index);
    offset += page->indices_size();
    if (offset >= page->rank_shard_size() || page->indices_size() == 0) {
      return absl::OkStatus();
    }
  }
}

absl::Status PrintPlan(client::CoordinatorClient& client,
                       const PlanFlags& flags) {
  StdoutBuffer out;
  return ForEachPlannedIndex(client, flags, [&out](uint64_t index) {
    absl::StrAppend(&out.text(), index, "\n");
    out.MaybeFlush();
  });
}

// --by-source: how many of the rank's indices of the epoch come from each
// source of a mixture, "source NAME: COUNT" per line.
absl::Status PrintPlanBySource(client::CoordinatorClient& client,
                               const PlanFlags& flags) {
  absl::StatusOr<shard::v1::Job> job = client.GetJob(flags.job);
  if (!job.ok()) return job.status();
  const auto& sources = job->spec().sources();
  if (sources.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", flags.job, " has no sources: --by-source is for mixtures"));
  }
  const std::vector<uint64_t> ends = plan::SourceEnds(job->spec());
  std::vector<uint64_t> counts(ends.size(), 0);
  absl::Status read = ForEachPlannedIndex(client, flags, [&](uint64_t index) {
    ++counts[plan::SourceOf(ends, index)];
  });
  if (!read.ok()) return read;
  for (int k = 0; k < sources.size(); ++k) {
    std::printf("source %s: %llu\n", sources[k].name().c_str(),
                static_cast<unsigned long long>(counts[k]));
  }
  return absl::OkStatus();
}

}  // namespace

Command AddPlan(CLI::App& shardctl) {
  auto flags = std::make_shared<PlanFlags>();
  CLI::App* app = shardctl.add_subcommand(
      "plan", "print a rank's indices of an epoch, one per line");
  cli::AddOption(*app, "--job", flags->job, "job id")->required();
  cli::AddOption(*app, "--epoch", flags->epoch, "epoch")->required();
  cli::AddOption(*app, "--rank", flags->rank, "rank")->required();
  app->add_flag("--by-source", flags->by_source,
                "a mixture: print how many of the indices come from each "
                "source instead");
  cli::AddOption(*app, "--costs", flags->costs_files,
                 "balanced batches: the costs the job was created with (a "
                 "mixture's once per source, in order, or once); prints the "
                 "rank's micro-batches, 'STEP_END COST: INDEX ...'");
  cli::AddOption(*app, "--costs-format", flags->costs_format,
                 "auto (.npy), npy, u16 or u32, as create-job takes it");
  app->add_flag("--balance", flags->balance,
                "balanced batches (with --costs): print the epoch's step cost "
                "imbalance and padding instead");
  return {app,
          Connected(
              [flags](const std::shared_ptr<client::CoordinatorClient>& client,
                      const client::ClientOptions&) {
                if (!flags->costs_files.empty() || flags->balance) {
                  return PrintPlanOfBatches(*client, *flags);
                }
                return flags->by_source ? PrintPlanBySource(*client, *flags)
                                        : PrintPlan(*client, *flags);
              })};
}

namespace {

// A barrier of the world's ranks through the job's store: marks this rank
// done and waits up to `wait` for every rank's mark. Best effort: a rank
// that never comes (it died, the generation ended) is not waited for
// longer.
void AwaitEveryRank(client::CoordinatorClient& client,
                    const client::Membership& membership, absl::Duration wait) {
  constexpr absl::string_view kDone = "shardctl/consume/done/";
  if (!client.StoreSet(membership, absl::StrCat(kDone, membership.rank), "1")
           .ok()) {
    return;
  }
  std::vector<std::string> every_rank;
  for (uint32_t rank = 0; rank < membership.world_size; ++rank) {
    every_rank.push_back(absl::StrCat(kDone, rank));
  }
  client.StoreWait(membership, every_rank, wait).IgnoreError();
}

// consume's work: `epochs` epochs of the member's shard from their start,
// then the barrier of AwaitEveryRank (so that leaving does not end the
// generation under ranks still streaming), heartbeating all along.
absl::Status ConsumeEpochs(
    const std::shared_ptr<client::CoordinatorClient>& client,
    const client::Membership& membership, uint64_t epochs,
    absl::Duration wait) {
  client::Heartbeater heartbeater(client, membership, absl::Seconds(2));
  StdoutBuffer out;
  for (uint64_t epoch = 0; epoch < epochs; ++epoch) {
    std::unique_ptr<client::ShardStream> stream =
        client->OpenStream(membership, epoch, /*start_position=*/0);
    const std::string prefix = absl::StrCat(epoch, " ", membership.rank, " ");
    if (absl::Status s = membership.spec.has_batches()
                             ? PrintBatches(*stream, prefix, out)
                             : PrintIndices(*stream, prefix, out);
        !s.ok()) {
      return s;
    }
  }
  AwaitEveryRank(*client, membership, wait);
  return absl::OkStatus();
}

}  // namespace

Command AddConsume(CLI::App& shardctl) {
  struct Flags {
    std::string job;
    std::string member;
    uint64_t epochs = 1;
    absl::Duration wait = absl::Minutes(5);
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = shardctl.add_subcommand(
      "consume",
      "join a job, wait for its world and print \"EPOCH RANK INDEX\" per "
      "index streamed");
  cli::AddOption(*app, "--job", flags->job, "job id")->required();
  cli::AddOption(*app, "--member", flags->member, "member id to join as")
      ->required();
  cli::AddOption(*app, "--epochs", flags->epochs, "epochs to stream");
  cli::AddDuration(*app, "--wait", &flags->wait,
                   "how long to wait for the world to form");
  return {app,
          Connected(
              [flags](const std::shared_ptr<client::CoordinatorClient>& client,
                      const client::ClientOptions&) -> absl::Status {
                absl::StatusOr<client::Membership> membership = client->Join(
                    flags->job, flags->member, std::nullopt, flags->wait);
                if (!membership.ok()) return membership.status();
                absl::Status streamed = ConsumeEpochs(
                    client, *membership, flags->epochs, flags->wait);
                // Done: leave, as a trainer does, so the job can be deleted
                // without
                // --force.
                absl::Status left = client->Leave(*membership);
                return streamed.ok() ? left : streamed;
              })};
}

}  // namespace shard::shardctl
