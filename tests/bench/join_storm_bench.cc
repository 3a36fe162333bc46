// Join storm and waiting-call load against a running shardd, while an
// unrelated one-rank job heartbeats every 100 ms. Two phases for W joins:
//
//   storm:   W members join a job of world size W at once (AsyncJoins
//            over 16 connections, no thread per call); reports the time
//            until every join was answered with the formed world, and the
//            CPU the coordinator and this client spent meanwhile.
//   waiting: W members join a job of world size W + 1, so every join stays
//            parked; reports the coordinator's threads and RSS while they
//            wait, then cancels them all and reports how long until every
//            client saw its call end, and the coordinator's threads one
//            second later (a thread per waiting call would still be there).
//
// Each phase reports p50/p99/max of the other job's heartbeat latency.
// Prints one JSON line.
//
//   shard-join-storm-bench --coordinator HOST:PORT --coordinator-pid PID
//                          --joins W
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
#include "tests/support/async_joins.h"

namespace shard::bench {
namespace {

constexpr int kConnections = 16;
constexpr uint32_t kJoinWaitMs = 300000;

int Run(const std::string& address, int pid, int joins) {
  const auto connections = Connect(address, kConnections);
  const std::vector<shard::v1::Coordinator::Stub*> stubs = StubsOf(connections);
  shard::v1::Coordinator::Stub* control = stubs[0];
  absl::StatusOr<std::unique_ptr<HeartbeatProbe>> heartbeats =
      HeartbeatProbe::Start(control, "bench-other");
  if (!heartbeats.ok()) return Fail(heartbeats.status().ToString());
  absl::SleepFor(absl::Seconds(1));
  (*heartbeats)->TakeJson("warmup");

  // Phase 1: a world of W forms.
  const std::string storm_job = absl::StrCat("bench-storm-", joins);
  if (!CreateJob(control, storm_job, joins)) return Fail("cannot create job");
  const double coordinator_cpu_before_s = ProcCpuSeconds(pid);
  const double client_cpu_before_s = OwnCpuSeconds();
  const absl::Time storm_began = absl::Now();
  size_t formed = 0;
  {
    testing::AsyncJoins storm(stubs, storm_job, "member-", joins, kJoinWaitMs);
    storm.AwaitDone();
    formed = storm.ok();
  }
  const double form_s = absl::ToDoubleSeconds(absl::Now() - storm_began);
  const double storm_coordinator_cpu_s =
      ProcCpuSeconds(pid) - coordinator_cpu_before_s;
  const double storm_client_cpu_s = OwnCpuSeconds() - client_cpu_before_s;
  const std::string storm_heartbeats = (*heartbeats)->TakeJson("storm");

  // Phase 2: W joins stay parked.
  const std::string wait_job = absl::StrCat("bench-wait-", joins);
  if (!CreateJob(control, wait_job, joins + 1)) return Fail("cannot create");
  const double threads_before = ProcStatusField(pid, "Threads");
  double threads_waiting = 0, rss_waiting_mib = 0, cancel_s = 0;
  double threads_after_cancel = 0;
  std::string waiting_heartbeats;
  {
    testing::AsyncJoins waiting(stubs, wait_job, "member-", joins, kJoinWaitMs);
    while (JoinedMembers(control, wait_job) < static_cast<uint32_t>(joins)) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    (*heartbeats)->TakeJson("joining");
    absl::SleepFor(absl::Seconds(3));  // Heartbeats under the parked load.
    waiting_heartbeats = (*heartbeats)->TakeJson("waiting");
    threads_waiting = ProcStatusField(pid, "Threads");
    rss_waiting_mib = ProcStatusField(pid, "VmRSS") / 1024;
    const absl::Time cancel_began = absl::Now();
    waiting.CancelAll();
    waiting.AwaitDone();
    cancel_s = absl::ToDoubleSeconds(absl::Now() - cancel_began);
    absl::SleepFor(absl::Seconds(1));
    threads_after_cancel = ProcStatusField(pid, "Threads");
  }
  std::printf(
      "{\"joins\":%d,\"formed\":%zu,\"form_s\":%.3f,"
      "\"storm_coordinator_cpu_s\":%.2f,\"storm_client_cpu_s\":%.2f,%s,"
      "\"threads_before\":%.0f,"
      "\"threads_waiting\":%.0f,\"rss_waiting_mib\":%.1f,%s,"
      "\"cancel_all_s\":%.3f,\"threads_after_cancel\":%.0f}\n",
      joins, formed, form_s, storm_coordinator_cpu_s, storm_client_cpu_s,
      storm_heartbeats.c_str(), threads_before, threads_waiting,
      rss_waiting_mib, waiting_heartbeats.c_str(), cancel_s,
      threads_after_cancel);
  return formed == static_cast<size_t>(joins) ? 0 : 1;
}

}  // namespace
}  // namespace shard::bench

int main(int argc, char** argv) {
  shard::sync::TuneForManyCalls();
  CLI::App app("Joins many members at once and times the world forming.");
  shard::cli::Configure(app, "shard-join-storm-bench");
  std::string address;
  int pid = 0, joins = 1000;
  shard::cli::AddOption(app, "--coordinator", address, "HOST:PORT")->required();
  shard::cli::AddOption(app, "--coordinator-pid", pid, "the coordinator's pid")
      ->required()
      ->check(shard::cli::AtLeast(1));
  shard::cli::AddOption(app, "--joins", joins, "members joining")
      ->check(shard::cli::AtLeast(1));
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  return shard::bench::Run(address, pid, joins);
}
