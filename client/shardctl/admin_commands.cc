#include "client/shardctl/admin_commands.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/awaited_world.h"
#include "client/shardctl/batch_plan.h"
#include "client/shardctl/job_warnings.h"
#include "common/cli/command_line.h"
#include "common/plan/spec/job_spec.h"
#include "google/protobuf/util/json_util.h"
#include "shard/client/coordinator_replicas.h"

namespace shard::shardctl {
namespace {

// Adds --output table|json, bound to *output.
void AddOutputOption(CLI::App& app, std::string* output) {
  cli::AddOption(app, "--output,-o", *output, "table or json")
      ->check(CLI::IsMember({"table", "json"}));
}

absl::Status PrintJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(message, &json, options)
           .ok()) {
    return absl::InternalError("cannot format JSON");
  }
  std::fputs(json.c_str(), stdout);
  return absl::OkStatus();
}

// Left-aligned columns, two spaces apart.
void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (size_t c = 0; c < row.size(); ++c) {
      widths[c] = std::max(widths[c], row[c].size());
    }
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size())
        line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    std::printf("%s\n", line.c_str());
  }
}

std::string ShuffleName(const shard::v1::JobSpec& spec) {
  if (!spec.shuffle()) return "off";
  switch (spec.shuffle_algorithm()) {
    case shard::v1::SHUFFLE_ALGORITHM_FEISTEL:
      return "feistel";
    case shard::v1::SHUFFLE_ALGORITHM_BLOCK:
      return "block";
    default:
      return spec.torch_randperm() == shard::v1::TORCH_RANDPERM_LEGACY
                 ? "torch-legacy"
                 : "torch-2.6";
  }
}

std::string WorldName(const shard::v1::Job& job) {
  const shard::v1::JobSpec& spec = job.spec();
  std::string world =
      absl::StrCat(job.current_world_size(), "/", spec.world_size());
  if (spec.min_world_size() != spec.max_world_size()) {
    absl::StrAppend(&world, " (", spec.min_world_size(), "-",
                    spec.max_world_size(), ")");
  }
  return world;
}

std::vector<std::string> JobRow(const shard::v1::Job& job) {
  return {job.job_id(),
          absl::StrCat(job.spec().dataset_size()),
          WorldName(job),
          absl::StrCat(job.spec().seed()),
          ShuffleName(job.spec()),
          std::string(plan::TailName(job.spec().tail())),
          absl::StrCat(job.committed_epoch()),
          absl::StrCat(job.committed_position()),
          absl::StrCat(job.joined_members()),
          absl::StrCat(job.generation())};
}

const std::vector<std::string>& JobHeader() {
  static const std::vector<std::string> kHeader = {
      "JOB",  "SIZE",  "WORLD",    "SEED",    "SHUFFLE",
      "TAIL", "EPOCH", "POSITION", "MEMBERS", "GENERATION"};
  return kHeader;
}

// Each replica's role, asked of it alone (no retry, no leader following).
std::vector<std::vector<std::string>> ReplicaRows(
    const client::ClientOptions& options,
    const std::vector<std::string>& addresses) {
  std::vector<std::vector<std::string>> rows = {{"REPLICA", "ROLE", "DETAIL"}};
  for (const std::string& address : addresses) {
    client::ClientOptions one = options;
    one.address = address;
    one.retry.deadline = absl::ZeroDuration();
    one.rpc_timeout = std::min(options.rpc_timeout, absl::Seconds(5));
    absl::StatusOr<std::unique_ptr<client::CoordinatorClient>> replica =
        client::CoordinatorClient::Connect(one);
    absl::Status answer = replica.status();
    if (replica.ok()) answer = (*replica)->ListJobs().status();
    if (answer.ok()) {
      rows.push_back({one.address, "leader", ""});
    } else {
      rows.push_back({one.address,
                      absl::IsUnavailable(answer) ? "not serving" : "error",
                      std::string(answer.message())});
    }
  }
  return rows;
}

// "weight=W", "repeat=R" or "choose=C" (no share: repeat=1).
std::string ShareName(const shard::v1::Source& source) {
  switch (source.share_case()) {
    case shard::v1::Source::kWeight:
      return absl::StrCat("weight=", source.weight());
    case shard::v1::Source::kRepeat:
      return absl::StrCat("repeat=", source.repeat());
    case shard::v1::Source::kChoose:
      return absl::StrCat("choose=", source.choose());
    case shard::v1::Source::SHARE_NOT_SET:
      break;
  }
  return "repeat=1";
}

// A mixture's sources: name, size, share and samples per epoch.
void PrintSources(const shard::v1::Job& job) {
  std::vector<std::vector<std::string>> rows = {
      {"SOURCE", "SIZE", "SHARE", "PER EPOCH"}};
  for (int k = 0; k < job.spec().sources_size(); ++k) {
    const shard::v1::Source& source = job.spec().sources(k);
    rows.push_back(
        {source.name(), absl::StrCat(source.size()), ShareName(source),
         k < job.source_counts_size() ? absl::StrCat(job.source_counts(k))
                                      : std::string("?")});
  }
  std::printf("\n");
  PrintTable(rows);
}

// The balance of the steps the job's streams took (of the epoch's latest
// world: from its position on).
void PrintBalance(const shard::v1::BatchBalance& balance) {
  const std::string from =
      balance.from_position() == 0
          ? std::string()
          : absl::StrCat(" from position ", balance.from_position(),
                         " (the world resized there)");
  std::printf(
      "\nbalance of epoch %llu as streamed%s (%llu steps, %llu samples):\n%s",
      static_cast<unsigned long long>(balance.epoch()), from.c_str(),
      static_cast<unsigned long long>(balance.steps()),
      static_cast<unsigned long long>(balance.samples()),
      BalanceLines(balance).c_str());
}

// The samples a window of balanced batches holds for the job's world (the
// current one, else the spec's) and where that size comes from.
std::string BatchWindowOf(const shard::v1::Job& job) {
  const plan::BatchPolicy policy = plan::BatchPolicyOf(job.spec());
  const uint32_t world = job.current_world_size() > 0 ? job.current_world_size()
                                                      : job.spec().world_size();
  const std::string rule =
      policy.window > 0 ? "given"
      : policy.batch_tokens > 0 && policy.costs_total > 0
          ? absl::StrCat("the default: ", plan::kDefaultWindowSteps,
                         " steps at the costs' mean")
          : "the default";
  return absl::StrCat(policy.WindowSamples(world), " samples at W=", world,
                      " (", rule, ")");
}

// describe's table: the job's fields (and their warnings, on stderr), then
// a mixture's sources, then its members.
void PrintJobDetails(const shard::v1::Job& job) {
  const shard::v1::JobSpec& spec = job.spec();
  std::vector<std::vector<std::string>> fields = {
      {"job:", job.job_id()},
      {"dataset size:", absl::StrCat(spec.dataset_size())},
  };
  if (spec.sources_size() > 0) {
    fields.push_back({"epoch size:", absl::StrCat(spec.epoch_size())});
  }
  fields.insert(
      fields.end(),
      {
          {"world size:", WorldName(job)},
          {"seed:", absl::StrCat(spec.seed())},
          {"shuffle:", ShuffleName(spec)},
          {"tail:", std::string(plan::TailName(spec.tail()))},
          spec.has_batches()
              ? std::vector<std::string>{"balanced batches:",
                                         plan::DescribeBatchPolicy(spec)}
              : std::vector<std::string>{"samples per rank:",
                                         absl::StrCat(job.samples_per_rank())},
      });
  if (spec.has_batches()) {
    fields.push_back({"batch window:", BatchWindowOf(job)});
  }
  fields.insert(
      fields.end(),
      {
          {"committed:", absl::StrCat("epoch ", job.committed_epoch(),
                                      " position ", job.committed_position())},
          {"generation:", absl::StrCat(job.generation())},
          {"members:", absl::StrCat(job.joined_members())},
      });
  if (job.current_world_size() == 0) {
    const client::AwaitedWorld awaited = client::AwaitedWorldOf(job);
    fields.push_back(
        {"world awaits:",
         absl::StrCat(awaited.size, " members",
                      awaited.rule.empty() ? "" : " (" + awaited.rule + ")")});
  }
  PrintTable(fields);
  PrintJobWarnings(job);
  if (spec.sources_size() > 0) PrintSources(job);
  if (job.has_batch_balance()) PrintBalance(job.batch_balance());
  if (job.members_size() == 0) return;
  std::printf("\n");
  std::vector<std::vector<std::string>> rows = {{"MEMBER", "RANK"}};
  for (const shard::v1::JobMember& member : job.members()) {
    rows.push_back({member.member_id(),
                    member.in_world()          ? absl::StrCat(member.rank())
                    : member.awaiting_rejoin() ? std::string("re-joining")
                                               : std::string("waiting")});
  }
  PrintTable(rows);
}

}  // namespace

Command AddStatus(CLI::App& shardctl) {
  auto output = std::make_shared<std::string>("table");
  CLI::App* app = shardctl.add_subcommand(
      "status",
      "list the jobs (with several --coordinator addresses: each replica's "
      "role first)");
  AddOutputOption(*app, output.get());
  return {app,
          Connected(
              [output](const std::shared_ptr<client::CoordinatorClient>& client,
                       const client::ClientOptions& options) -> absl::Status {
                absl::StatusOr<std::vector<shard::v1::Job>> jobs =
                    client->ListJobs();
                if (!jobs.ok()) return jobs.status();
                if (*output == "json") {
                  shard::v1::ListJobsResponse response;
                  for (const shard::v1::Job& job : *jobs) {
                    *response.add_jobs() = job;
                  }
                  return PrintJson(response);
                }
                absl::StatusOr<std::vector<std::string>> addresses =
                    client::ParseCoordinatorAddresses(options.address);
                if (addresses.ok() && addresses->size() > 1) {
                  PrintTable(ReplicaRows(options, *addresses));
                  std::printf("\n");
                }
                if (jobs->empty()) {
                  std::printf("no jobs\n");
                  return absl::OkStatus();
                }
                std::vector<std::vector<std::string>> rows = {JobHeader()};
                for (const shard::v1::Job& job : *jobs)
                  rows.push_back(JobRow(job));
                PrintTable(rows);
                return absl::OkStatus();
              })};
}

Command AddDescribe(CLI::App& shardctl) {
  struct Flags {
    std::string job;
    std::string output = "table";
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app =
      shardctl.add_subcommand("describe", "show one job and its members");
  cli::AddOption(*app, "--job", flags->job, "job id")->required();
  AddOutputOption(*app, &flags->output);
  return {app,
          Connected(
              [flags](const std::shared_ptr<client::CoordinatorClient>& client,
                      const client::ClientOptions&) -> absl::Status {
                absl::StatusOr<shard::v1::Job> job = client->GetJob(flags->job);
                if (!job.ok()) return job.status();
                if (flags->output == "json") return PrintJson(*job);
                PrintJobDetails(*job);
                return absl::OkStatus();
              })};
}

Command AddDeleteJob(CLI::App& shardctl) {
  struct Flags {
    std::string job;
    bool force = false;
    std::string output = "table";
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* app = shardctl.add_subcommand(
      "delete-job", "delete a job and its progress (journaled)");
  cli::AddOption(*app, "--job", flags->job, "job id")->required();
  app->add_flag("--force", flags->force,
                "delete even while members are joined (their generation "
                "ends)");
  AddOutputOption(*app, &flags->output);
  return {
      app,
      Connected(
          [flags](const std::shared_ptr<client::CoordinatorClient>& client,
                  const client::ClientOptions&) -> absl::Status {
            if (absl::Status s = client->DeleteJob(flags->job, flags->force);
                !s.ok()) {
              return s;
            }
            if (flags->output == "json") {
              std::printf("{\n \"deleted\": \"%s\"\n}\n", flags->job.c_str());
            } else {
              std::printf("deleted job %s\n", flags->job.c_str());
            }
            return absl::OkStatus();
          })};
}

Command AddDrain(CLI::App& shardctl) {
  auto output = std::make_shared<std::string>("table");
  CLI::App* app = shardctl.add_subcommand(
      "drain",
      "drain the coordinator: in-flight calls get its shutdown grace, then "
      "it exits 0");
  AddOutputOption(*app, output.get());
  return {
      app,
      Connected(
          [output](const std::shared_ptr<client::CoordinatorClient>& client,
                   const client::ClientOptions&) -> absl::Status {
            absl::StatusOr<absl::Duration> grace = client->Drain();
            if (!grace.ok()) return grace.status();
            if (*output == "json") {
              std::printf(
                  "{\n \"draining\": true,\n \"graceMs\": \"%lld\"\n}\n",
                  static_cast<long long>(absl::ToInt64Milliseconds(*grace)));
            } else {
              std::printf(
                  "coordinator draining: in-flight calls have %s, then it "
                  "exits\n",
                  absl::FormatDuration(*grace).c_str());
            }
            return absl::OkStatus();
          })};
}

}  // namespace shard::shardctl
