// Durability figures: mutating-RPC latency with fsync through the real gRPC
// server (p50/p99 of CommitProgress), recovery time for journals of 10^5
// and 10^6 updates, and snapshot bytes per job. Exit status 1 when a part
// fails.
//
//   shard-durability-bench [--dir /tmp] [--commits 2000]
//                          [--recovery-records 100000,1000000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cli/command_line.h"
#include "common/plan/spec/job_spec.h"
#include "common/storage/file_system.h"
#include "grpcpp/grpcpp.h"
#include "server/rpc/coordinator_server.h"
#include "server/storage/record_codec.h"
#include "server/storage/state_log.h"
#include "tests/support/blocking_coordinator.h"

namespace shard::bench {
namespace {

using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double Millis(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

shard::state::v1::StateUpdate Commit(uint64_t position) {
  shard::state::v1::StateUpdate update;
  update.mutable_progress_committed()->set_job_id("job");
  update.mutable_progress_committed()->set_position(position);
  return update;
}

// CommitProgress latency through gRPC with a durable service on `dir`.
bool MeasureCommitLatency(const std::string& dir, int commits) {
  auto opened = storage::StateLog::Open(storage::PosixFileSystem(), dir);
  if (!opened.ok()) {
    std::fprintf(stderr, "open %s: %s\n", dir.c_str(),
                 std::string(opened.status().message()).c_str());
    return false;
  }
  server::CoordinatorServerOptions options;
  options.listen = "127.0.0.1:0";
  auto server = server::CoordinatorServer::Start(
      std::make_shared<testing::BlockingCoordinator>(
          server::CoordinatorOptions{}, *std::move(opened)),
      options);
  if (!server.ok()) {
    std::fprintf(stderr, "serve: %s\n",
                 std::string(server.status().message()).c_str());
    return false;
  }
  auto stub = shard::v1::Coordinator::NewStub(grpc::CreateChannel(
      (*server)->address(), grpc::InsecureChannelCredentials()));

  shard::v1::JoinJobRequest join;
  join.set_job_id("job");
  join.set_member_id("m");
  join.mutable_spec()->set_dataset_size(uint64_t{1} << 40);
  join.mutable_spec()->set_world_size(1);
  join.mutable_spec()->set_shuffle(false);
  join.set_wait_for_world_ms(1000);
  shard::v1::JoinJobResponse joined;
  {
    grpc::ClientContext context;
    if (grpc::Status status = stub->JoinJob(&context, join, &joined);
        !status.ok()) {
      std::fprintf(stderr, "join failed: %s\n", status.error_message().c_str());
      return false;
    }
  }
  std::vector<double> latencies;
  for (int i = 1; i <= commits; ++i) {
    shard::v1::CommitProgressRequest request;
    request.set_job_id("job");
    request.set_generation(joined.generation());
    request.set_position(static_cast<uint64_t>(i));
    request.set_member_id("m");
    shard::v1::CommitProgressResponse response;
    grpc::ClientContext context;
    const Clock::time_point start = Clock::now();
    grpc::Status status = stub->CommitProgress(&context, request, &response);
    latencies.push_back(Millis(Clock::now() - start));
    if (!status.ok()) {
      std::fprintf(stderr, "commit failed: %s\n",
                   status.error_message().c_str());
      return false;
    }
  }
  std::sort(latencies.begin(), latencies.end());
  std::printf(
      "CommitProgress over gRPC with fsync, %d commits: p50 %.3f ms, "
      "p99 %.3f ms, max %.3f ms\n",
      commits, latencies[latencies.size() / 2],
      latencies[latencies.size() * 99 / 100], latencies.back());
  (*server)->Stop(absl::ZeroDuration());
  return true;
}

// Time to recover a journal of `updates` records (no snapshot): a job of
// one member, its world, then commits.
bool MeasureRecovery(const std::string& dir, uint64_t updates) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string journal;
  auto append = [&](uint64_t sequence,
                    const shard::state::v1::StateUpdate& update) {
    shard::state::v1::JournalRecord record;
    record.set_sequence(sequence);
    *record.mutable_update() = update;
    journal += storage::EncodeRecord(record.SerializeAsString());
  };
  shard::v1::JobSpec spec;
  spec.set_dataset_size(uint64_t{1} << 40);
  spec.set_world_size(1);
  spec.set_shuffle(false);
  shard::state::v1::StateUpdate created;
  created.mutable_job_created()->set_job_id("job");
  *created.mutable_job_created()->mutable_spec() =
      *plan::NormalizeJobSpec(spec, UINT64_MAX);
  shard::state::v1::StateUpdate joined;
  joined.mutable_member_joined()->set_job_id("job");
  joined.mutable_member_joined()->set_member_id("m");
  shard::state::v1::StateUpdate formed;
  formed.mutable_generation_formed()->set_job_id("job");
  formed.mutable_generation_formed()->set_generation(1);
  formed.mutable_generation_formed()->add_members("m");
  append(1, created);
  append(2, joined);
  append(3, formed);
  for (uint64_t i = 4; i <= updates; ++i) append(i, Commit(i));
  const std::string path = dir + "/journal-00000000000000000001.log";
  if (!storage::PosixFileSystem()->WriteFileAtomically(path, journal).ok()) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return false;
  }
  const Clock::time_point start = Clock::now();
  auto opened = storage::StateLog::Open(storage::PosixFileSystem(), dir);
  const double ms = Millis(Clock::now() - start);
  if (!opened.ok()) {
    std::fprintf(stderr, "recovery failed: %s\n",
                 std::string(opened.status().message()).c_str());
    return false;
  }
  std::printf(
      "recovery of %llu journal records (%.1f MiB): %.1f ms (%.2f us per "
      "record)\n",
      static_cast<unsigned long long>(updates), journal.size() / 1048576.0, ms,
      1000.0 * ms / updates);
  return true;
}

// Applies a valid update to the bench's state (aborts if it is refused).
void MustApply(server::CoordinatorState& state,
               const shard::state::v1::StateUpdate& update) {
  if (absl::Status s = state.Apply(update); !s.ok()) {
    std::fprintf(stderr, "snapshot bench: %s\n",
                 std::string(s.message()).c_str());
    std::abort();
  }
}

// Snapshot bytes per job for jobs of `members` members each.
void MeasureSnapshot(int jobs, int members) {
  server::CoordinatorState state;
  for (int j = 0; j < jobs; ++j) {
    const std::string id = absl::StrCat("train-job-", j);
    shard::v1::JobSpec spec;
    spec.set_dataset_size(100000000);
    spec.set_world_size(members);
    shard::state::v1::StateUpdate created;
    created.mutable_job_created()->set_job_id(id);
    *created.mutable_job_created()->mutable_spec() =
        *plan::NormalizeJobSpec(spec, UINT64_MAX);
    MustApply(state, created);
    shard::state::v1::StateUpdate formed;
    formed.mutable_generation_formed()->set_job_id(id);
    formed.mutable_generation_formed()->set_generation(state.last_generation() +
                                                       1);
    for (int m = 0; m < members; ++m) {
      shard::state::v1::StateUpdate joined;
      joined.mutable_member_joined()->set_job_id(id);
      joined.mutable_member_joined()->set_member_id(
          absl::StrCat(id, "-worker-", m, "/0"));
      MustApply(state, joined);
      formed.mutable_generation_formed()->add_members(
          joined.member_joined().member_id());
    }
    MustApply(state, formed);
  }
  const size_t bytes =
      storage::EncodeRecord(state.ToSnapshot(1).SerializeAsString()).size();
  std::printf("snapshot: %d jobs of %d members: %zu bytes, %.0f bytes/job\n",
              jobs, members, bytes, static_cast<double>(bytes) / jobs);
}

}  // namespace
}  // namespace shard::bench

int main(int argc, char** argv) {
  CLI::App app(
      "Durability figures: commit latency with fsync, recovery "
      "time, snapshot bytes per job.");
  shard::cli::Configure(app, "shard-durability-bench");
  std::string dir = "/tmp";
  int commits = 2000;
  std::vector<uint64_t> recovery_records = {100000, 1000000};
  shard::cli::AddOption(app, "--dir", dir,
                        "where the bench writes (a "
                        "shard-durability-bench folder, removed at the end)");
  shard::cli::AddOption(app, "--commits", commits,
                        "CommitProgress calls to time")
      ->check(shard::cli::AtLeast(1));
  shard::cli::AddOption(app, "--recovery-records", recovery_records,
                        "journal sizes to recover (records, at least 4)")
      ->delimiter(',')
      ->check(shard::cli::AtLeast(4));
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  const std::string work = dir + "/shard-durability-bench";
  std::filesystem::remove_all(work);
  std::filesystem::create_directories(work);
  bool ok = shard::bench::MeasureCommitLatency(work + "/rpc", commits);
  for (uint64_t records : recovery_records) {
    ok = shard::bench::MeasureRecovery(
             absl::StrCat(work, "/recovery-", records), records) &&
         ok;
  }
  shard::bench::MeasureSnapshot(1000, 8);
  shard::bench::MeasureSnapshot(100, 256);
  std::filesystem::remove_all(work);
  return ok ? 0 : 1;
}
