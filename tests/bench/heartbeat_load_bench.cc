// Steady state of a large job against a running shardd: W members join a
// job of world size W at once (gRPC async client API over 16
// connections), then, for --seconds, every member heartbeats once per
// --interval, or at the longer interval the coordinator asks for
// (shardd --max-heartbeat-rate; the calls of each interval spread over it
// in slices of 100 ms) while the job commits every 5 s and an unrelated
// one-rank job heartbeats every 100 ms. Reports the heartbeats sent per second,
// how many failed, the coordinator's CPU (cores: its user + system time over
// the phase), its RSS and threads, and the other job's heartbeat p50 /
// p99 / max. The benchmark's client shares the machine with the
// coordinator; its own CPU is reported too. Prints one JSON line.
//
//   shard-heartbeat-load-bench --coordinator HOST:PORT --coordinator-pid PID
//                              --members W [--interval 2] [--seconds 20]
#include <algorithm>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/cli/command_line.h"
#include "common/sync/busy_process.h"
#include "grpcpp/grpcpp.h"
#include "shard/v1/shard.grpc.pb.h"
#include "tests/bench/bench_report.h"
#include "tests/bench/coordinator_load.h"
#include "tests/support/async_calls.h"
#include "tests/support/async_joins.h"

namespace shard::bench {
namespace {

constexpr int kConnections = 16;
constexpr uint32_t kJoinWaitMs = 300000;
constexpr absl::Duration kSlice = absl::Milliseconds(100);
constexpr absl::Duration kCommitEvery = absl::Seconds(5);

using Heartbeats = testing::AsyncCalls<shard::v1::HeartbeatRequest,
                                       shard::v1::HeartbeatResponse>;

// Heartbeats of members [begin, end), each on stubs[i % stubs.size()],
// their events run on `queues`.
std::unique_ptr<Heartbeats> SendHeartbeats(
    const std::vector<shard::v1::Coordinator::Stub*>& stubs,
    const std::string& job, uint64_t generation, int begin, int end,
    const std::shared_ptr<testing::ClientQueues>& queues) {
  std::vector<shard::v1::HeartbeatRequest> requests;
  requests.reserve(end - begin);
  for (int i = begin; i < end; ++i) {
    requests.push_back(
        HeartbeatOf(job, absl::StrCat("member-", i), generation));
  }
  return std::make_unique<Heartbeats>(
      std::move(requests),
      [&stubs, begin](int i, grpc::ClientContext* context,
                      const shard::v1::HeartbeatRequest& request,
                      grpc::CompletionQueue* queue) {
        context->set_deadline(std::chrono::system_clock::now() +
                              std::chrono::seconds(30));
        return stubs[(begin + i) % stubs.size()]->PrepareAsyncHeartbeat(
            context, request, queue);
      },
      queues);
}

bool Commit(shard::v1::Coordinator::Stub* stub, const std::string& job,
            uint64_t generation, uint64_t position) {
  shard::v1::CommitProgressRequest request;
  request.set_job_id(job);
  request.set_generation(generation);
  request.set_epoch(0);
  request.set_position(position);
  request.set_member_id("member-0");
  shard::v1::CommitProgressResponse response;
  grpc::ClientContext context;
  return stub->CommitProgress(&context, request, &response).ok();
}

// The interval the coordinator asks its members to heartbeat at (one
// heartbeat of member 0 reads it); zero if that heartbeat failed.
absl::Duration AskedPace(shard::v1::Coordinator::Stub* stub,
                         const std::string& job, uint64_t generation) {
  shard::v1::HeartbeatResponse response;
  grpc::ClientContext context;
  const grpc::Status status = stub->Heartbeat(
      &context, HeartbeatOf(job, "member-0", generation), &response);
  if (!status.ok()) return absl::ZeroDuration();
  return absl::Milliseconds(response.next_heartbeat_ms());
}

struct SteadyFigures {
  uint64_t sent = 0;
  uint64_t failed = 0;
  uint64_t commits_failed = 0;
};

// Every member heartbeats once per `interval` for `seconds`, in slices.
SteadyFigures Steady(const std::vector<shard::v1::Coordinator::Stub*>& stubs,
                     const std::string& job, uint64_t generation, int members,
                     absl::Duration interval, absl::Duration seconds) {
  SteadyFigures figures;
  const int slices = std::max<int>(1, interval / kSlice);
  const auto queues = std::make_shared<testing::ClientQueues>();
  std::deque<std::unique_ptr<Heartbeats>> in_flight;
  const auto count_finished = [&](bool wait) {
    while (!in_flight.empty() && (wait || in_flight.front()->finished() ==
                                              in_flight.front()->size())) {
      in_flight.front()->AwaitDone();
      figures.failed += in_flight.front()->size() - in_flight.front()->ok();
      in_flight.pop_front();
    }
  };
  const absl::Time began = absl::Now();
  absl::Time next_commit = began + kCommitEvery;
  uint64_t position = 0;
  for (int64_t slice = 0;; ++slice) {
    const absl::Time at = began + slice * kSlice;
    if (at >= began + seconds) break;
    absl::SleepFor(at - absl::Now());
    const int part = static_cast<int>(slice % slices);
    const int begin = static_cast<int>(int64_t{members} * part / slices);
    const int end = static_cast<int>(int64_t{members} * (part + 1) / slices);
    in_flight.push_back(
        SendHeartbeats(stubs, job, generation, begin, end, queues));
    figures.sent += end - begin;
    if (absl::Now() >= next_commit) {
      position += members;
      figures.commits_failed += !Commit(stubs[0], job, generation, position);
      next_commit += kCommitEvery;
    }
    count_finished(/*wait=*/false);
  }
  count_finished(/*wait=*/true);
  return figures;
}

int Run(const std::string& address, int pid, int members,
        absl::Duration interval, absl::Duration seconds) {
  const auto connections = Connect(address, kConnections);
  const std::vector<shard::v1::Coordinator::Stub*> stubs = StubsOf(connections);
  absl::StatusOr<std::unique_ptr<HeartbeatProbe>> probe =
      HeartbeatProbe::Start(stubs[0], "bench-other");
  if (!probe.ok()) return Fail(probe.status().ToString());

  const std::string job = absl::StrCat("bench-steady-", members);
  shard::v1::CreateJobRequest create;
  create.set_job_id(job);
  create.mutable_spec()->set_dataset_size(static_cast<uint64_t>(members) *
                                          1000);
  create.mutable_spec()->set_world_size(members);
  shard::v1::Job created;
  grpc::ClientContext create_context;
  if (!stubs[0]->CreateJob(&create_context, create, &created).ok()) {
    return Fail("cannot create the job");
  }
  testing::AsyncJoins joins(stubs, job, "member-", members, kJoinWaitMs);
  joins.AwaitDone();
  if (joins.ok() != static_cast<size_t>(members)) {
    return Fail(absl::StrCat(joins.ok(), " of ", members, " joins formed"));
  }
  (*probe)->TakeJson("joins");

  // The members' own interval, or the coordinator's pace if longer (as
  // the clients do).
  const uint64_t generation = joins.response(0).generation();
  const absl::Duration asked = AskedPace(stubs[0], job, generation);
  const absl::Duration paced = std::max(interval, asked);
  const double cpu_before = ProcCpuSeconds(pid);
  const double own_before = OwnCpuSeconds();
  const absl::Time began = absl::Now();
  const SteadyFigures steady =
      Steady(stubs, job, generation, members, paced, seconds);
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - began);
  const double cores = (ProcCpuSeconds(pid) - cpu_before) / elapsed;
  const double own_cores = (OwnCpuSeconds() - own_before) / elapsed;
  const std::string heartbeats = (*probe)->TakeJson("steady");
  std::printf(
      "{\"members\":%d,\"interval_s\":%.1f,\"asked_interval_s\":%.3f,"
      "\"seconds\":%.1f,"
      "\"heartbeats_per_s\":%.0f,\"heartbeats_failed\":%llu,"
      "\"commits_failed\":%llu,\"coordinator_cores\":%.2f,"
      "\"client_cores\":%.2f,\"coordinator_rss_mib\":%.1f,"
      "\"coordinator_threads\":%.0f,%s}\n",
      members, absl::ToDoubleSeconds(interval), absl::ToDoubleSeconds(asked),
      elapsed, static_cast<double>(steady.sent) / elapsed,
      static_cast<unsigned long long>(steady.failed),
      static_cast<unsigned long long>(steady.commits_failed), cores, own_cores,
      ProcStatusField(pid, "VmRSS") / 1024, ProcStatusField(pid, "Threads"),
      heartbeats.c_str());
  return steady.failed == 0 && steady.commits_failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace shard::bench

int main(int argc, char** argv) {
  shard::sync::TuneForManyCalls();
  CLI::App app("A large job's members heartbeating at their interval.");
  shard::cli::Configure(app, "shard-heartbeat-load-bench");
  std::string address;
  int pid = 0, members = 1000;
  double interval_s = 2, seconds = 20;
  shard::cli::AddOption(app, "--coordinator", address, "HOST:PORT")->required();
  shard::cli::AddOption(app, "--coordinator-pid", pid, "the coordinator's pid")
      ->required()
      ->check(shard::cli::AtLeast(1));
  shard::cli::AddOption(app, "--members", members, "members of the job")
      ->check(shard::cli::AtLeast(1));
  shard::cli::AddOption(app, "--interval", interval_s,
                        "seconds between a member's heartbeats (the "
                        "clients' default: 2)")
      ->check(CLI::Range(0.1, 3600.0));
  shard::cli::AddOption(app, "--seconds", seconds, "length of the phase")
      ->check(CLI::Range(1.0, 86400.0));
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  return shard::bench::Run(address, pid, members, absl::Seconds(interval_s),
                           absl::Seconds(seconds));
}
