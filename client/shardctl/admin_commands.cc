#include "client/shardctl/admin_commands.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "client/cli_flags.h"
#include "common/plan/job_spec.h"
#include "google/protobuf/util/json_util.h"

namespace shard::shardctl {
namespace {

enum class Output { kTable, kJson };

absl::StatusOr<Output> ParseOutput(const client::CliFlags& flags) {
  const std::string output = flags.String("output", "table");
  if (output == "table") return Output::kTable;
  if (output == "json") return Output::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("--output must be table or json, got \"", output, "\""));
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
    const client::ClientOptions& options) {
  std::vector<std::vector<std::string>> rows = {{"REPLICA", "ROLE", "DETAIL"}};
  for (absl::string_view address :
       absl::StrSplit(options.address, ',', absl::SkipWhitespace())) {
    client::ClientOptions one = options;
    one.address = std::string(absl::StripAsciiWhitespace(address));
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

}  // namespace

absl::Status Status(client::CoordinatorClient& client,
                    const client::ClientOptions& options,
                    const std::vector<std::string>& args) {
  absl::StatusOr<client::CliFlags> flags =
      client::CliFlags::Parse(args, {"output"});
  if (!flags.ok()) return flags.status();
  absl::StatusOr<Output> output = ParseOutput(*flags);
  if (!output.ok()) return output.status();
  absl::StatusOr<std::vector<shard::v1::Job>> jobs = client.ListJobs();
  if (!jobs.ok()) return jobs.status();
  if (*output == Output::kJson) {
    shard::v1::ListJobsResponse response;
    for (const shard::v1::Job& job : *jobs) *response.add_jobs() = job;
    return PrintJson(response);
  }
  if (absl::StrContains(options.address, ',')) {
    PrintTable(ReplicaRows(options));
    std::printf("\n");
  }
  if (jobs->empty()) {
    std::printf("no jobs\n");
    return absl::OkStatus();
  }
  std::vector<std::vector<std::string>> rows = {JobHeader()};
  for (const shard::v1::Job& job : *jobs) rows.push_back(JobRow(job));
  PrintTable(rows);
  return absl::OkStatus();
}

absl::Status Describe(client::CoordinatorClient& client,
                      const std::vector<std::string>& args) {
  absl::StatusOr<client::CliFlags> flags =
      client::CliFlags::Parse(args, {"job", "output"});
  if (!flags.ok()) return flags.status();
  absl::StatusOr<std::string> job_id = flags->String("job");
  if (!job_id.ok()) return job_id.status();
  absl::StatusOr<Output> output = ParseOutput(*flags);
  if (!output.ok()) return output.status();
  absl::StatusOr<shard::v1::Job> job = client.GetJob(*job_id);
  if (!job.ok()) return job.status();
  if (*output == Output::kJson) return PrintJson(*job);
  const shard::v1::JobSpec& spec = job->spec();
  PrintTable({
      {"job:", job->job_id()},
      {"dataset size:", absl::StrCat(spec.dataset_size())},
      {"world size:", WorldName(*job)},
      {"seed:", absl::StrCat(spec.seed())},
      {"shuffle:", ShuffleName(spec)},
      {"tail:", std::string(plan::TailName(spec.tail()))},
      {"samples per rank:", absl::StrCat(job->samples_per_rank())},
      {"committed:", absl::StrCat("epoch ", job->committed_epoch(),
                                  " position ", job->committed_position())},
      {"generation:", absl::StrCat(job->generation())},
      {"members:", absl::StrCat(job->joined_members())},
  });
  if (job->members_size() > 0) {
    std::printf("\n");
    std::vector<std::vector<std::string>> rows = {{"MEMBER", "RANK"}};
    for (const shard::v1::JobMember& member : job->members()) {
      rows.push_back({member.member_id(), member.in_world()
                                              ? absl::StrCat(member.rank())
                                              : std::string("waiting")});
    }
    PrintTable(rows);
  }
  return absl::OkStatus();
}

absl::Status DeleteJob(client::CoordinatorClient& client,
                       const std::vector<std::string>& args) {
  absl::StatusOr<client::CliFlags> flags =
      client::CliFlags::Parse(args, {"job", "force", "output"});
  if (!flags.ok()) return flags.status();
  absl::StatusOr<std::string> job_id = flags->String("job");
  if (!job_id.ok()) return job_id.status();
  absl::StatusOr<bool> force = flags->Bool("force", false);
  if (!force.ok()) return force.status();
  absl::StatusOr<Output> output = ParseOutput(*flags);
  if (!output.ok()) return output.status();
  if (absl::Status s = client.DeleteJob(*job_id, *force); !s.ok()) return s;
  if (*output == Output::kJson) {
    std::printf("{\n \"deleted\": \"%s\"\n}\n", job_id->c_str());
  } else {
    std::printf("deleted job %s\n", job_id->c_str());
  }
  return absl::OkStatus();
}

absl::Status Drain(client::CoordinatorClient& client,
                   const std::vector<std::string>& args) {
  absl::StatusOr<client::CliFlags> flags =
      client::CliFlags::Parse(args, {"output"});
  if (!flags.ok()) return flags.status();
  absl::StatusOr<Output> output = ParseOutput(*flags);
  if (!output.ok()) return output.status();
  absl::StatusOr<absl::Duration> grace = client.Drain();
  if (!grace.ok()) return grace.status();
  if (*output == Output::kJson) {
    std::printf("{\n \"draining\": true,\n \"graceMs\": \"%lld\"\n}\n",
                static_cast<long long>(absl::ToInt64Milliseconds(*grace)));
  } else {
    std::printf(
        "coordinator draining: in-flight calls have %s, then it exits\n",
        absl::FormatDuration(*grace).c_str());
  }
  return absl::OkStatus();
}

}  // namespace shard::shardctl
