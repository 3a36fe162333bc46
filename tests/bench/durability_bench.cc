// Durability figures: mutating-RPC latency with fsync through the real gRPC
// server (p50/p99 of CommitProgress), recovery time for journals of 10^5
// and 10^6 updates, and snapshot bytes per job.
//
//   shard-durability-bench [--dir /tmp] [--commits 2000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/plan/job_spec.h"
#include "common/storage/file_system.h"
#include "grpcpp/grpcpp.h"
#include "server/grpc_coordinator.h"
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
void MeasureCommitLatency(const std::string& dir, int commits) {
  auto opened = storage::StateLog::Open(storage::PosixFileSystem(), dir);
  if (!opened.ok()) {
    std::fprintf(stderr, "open %s: %s\n", dir.c_str(),
                 std::string(opened.status().message()).c_str());
    return;
  }
  testing::BlockingCoordinator service({}, *std::move(opened));
  server::GrpcCoordinator glue(&service);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&glue);
  auto server = builder.BuildAndStart();
  auto stub = shard::v1::Coordinator::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));

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
    stub->JoinJob(&context, join, &joined);
  }
  std::vector<double> latencies;
  for (int i = 1; i <= commits; ++i) {
    shard::v1::CommitProgressRequest request;
    request.set_job_id("job");
    request.set_generation(joined.generation());
    request.set_position(static_cast<uint64_t>(i));
    shard::v1::CommitProgressResponse response;
    grpc::ClientContext context;
    const Clock::time_point start = Clock::now();
    grpc::Status status = stub->CommitProgress(&context, request, &response);
    latencies.push_back(Millis(Clock::now() - start));
    if (!status.ok()) {
      std::fprintf(stderr, "commit failed: %s\n",
                   status.error_message().c_str());
      return;
    }
  }
  std::sort(latencies.begin(), latencies.end());
  std::printf(
      "CommitProgress over gRPC with fsync, %d commits: p50 %.3f ms, "
      "p99 %.3f ms, max %.3f ms\n",
      commits, latencies[latencies.size() / 2],
      latencies[latencies.size() * 99 / 100], latencies.back());
  server->Shutdown();
}

// Time to recover a journal of `updates` records (no snapshot).
void MeasureRecovery(const std::string& dir, uint64_t updates) {
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
  shard::state::v1::StateUpdate created;
  created.mutable_job_created()->set_job_id("job");
  created.mutable_job_created()->mutable_spec()->set_dataset_size(uint64_t{1}
                                                                  << 40);
  created.mutable_job_created()->mutable_spec()->set_world_size(1);
  append(1, created);
  for (uint64_t i = 2; i <= updates; ++i) append(i, Commit(i));
  const std::string path = dir + "/journal-00000000000000000001.log";
  if (!storage::PosixFileSystem()->WriteFileAtomically(path, journal).ok()) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return;
  }
  const Clock::time_point start = Clock::now();
  auto opened = storage::StateLog::Open(storage::PosixFileSystem(), dir);
  const double ms = Millis(Clock::now() - start);
  if (!opened.ok()) {
    std::fprintf(stderr, "recovery failed: %s\n",
                 std::string(opened.status().message()).c_str());
    return;
  }
  std::printf(
      "recovery of %llu journal records (%.1f MiB): %.1f ms (%.2f us per "
      "record)\n",
      static_cast<unsigned long long>(updates), journal.size() / 1048576.0, ms,
      1000.0 * ms / updates);
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
  std::string dir = "/tmp";
  int commits = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--dir") {
      dir = argv[i + 1];
    } else if (flag == "--commits" && absl::SimpleAtoi(argv[i + 1], &commits)) {
    } else {
      std::fprintf(stderr,
                   "usage: shard-durability-bench [--dir DIR] "
                   "[--commits N]\n");
      return 2;
    }
  }
  const std::string work = dir + "/shard-durability-bench";
  std::filesystem::remove_all(work);
  std::filesystem::create_directories(work);
  shard::bench::MeasureCommitLatency(work + "/rpc", commits);
  shard::bench::MeasureRecovery(work + "/r5", 100000);
  shard::bench::MeasureRecovery(work + "/r6", 1000000);
  shard::bench::MeasureSnapshot(1000, 8);
  shard::bench::MeasureSnapshot(100, 256);
  std::filesystem::remove_all(work);
  return 0;
}
