// Keepalive pings of parked calls against a running shardd: C client
// connections, each with the client library's keepalive (a ping every 3 s,
// answered within 2 s, while a call is open, with no limit on pings
// without data: client/coordinator_channel.cc), each holding one join
// parked on a job that never fills, while an unrelated one-rank job
// heartbeats every 100 ms. Once every join is parked, for --seconds
// nothing but the pings reaches the coordinator: reports its CPU (cores:
// its user + system time over the phase), RSS and threads, the client's
// CPU, and the other job's heartbeat p50 / p99 / max. Then cancels the
// joins. Prints one JSON line.
//
//   shard-keepalive-load-bench --coordinator HOST:PORT --coordinator-pid PID
//                              --connections C [--seconds 30] [--no-pings]
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/cli/command_line.h"
#include "common/sync/busy_process.h"
#include "grpcpp/grpcpp.h"
#include "shard/client/coordinator_channel.h"
#include "shard/v1/shard.grpc.pb.h"
#include "tests/bench/bench_report.h"
#include "tests/bench/coordinator_load.h"
#include "tests/support/async_joins.h"

namespace shard::bench {
namespace {

constexpr uint32_t kJoinWaitMs = 300000;

// The channel arguments the client library pings with (its default
// keepalive, for coordinators whose leader lease is 5 s or more); none
// when `pings` is false (for a comparison without pings).
grpc::ChannelArguments ClientKeepalive(bool pings) {
  const client::Keepalive keepalive;
  grpc::ChannelArguments args;
  if (!pings) return args;
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS,
              static_cast<int>(absl::ToInt64Milliseconds(keepalive.time)));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
              static_cast<int>(absl::ToInt64Milliseconds(keepalive.timeout)));
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  return args;
}

int Run(const std::string& address, int pid, int connections,
        absl::Duration seconds, bool pings) {
  const auto owned = Connect(address, connections, ClientKeepalive(pings));
  const std::vector<shard::v1::Coordinator::Stub*> stubs = StubsOf(owned);
  absl::StatusOr<std::unique_ptr<HeartbeatProbe>> probe =
      HeartbeatProbe::Start(stubs[0], "bench-other");
  if (!probe.ok()) return Fail(probe.status().ToString());

  const std::string job = absl::StrCat("bench-parked-", connections);
  if (!CreateJob(stubs[0], job, connections + 1)) {
    return Fail("cannot create the job");
  }
  const double idle_cores_before = ProcCpuSeconds(pid);
  const absl::Time idle_began = absl::Now();
  absl::SleepFor(absl::Seconds(2));
  const double idle_cores = (ProcCpuSeconds(pid) - idle_cores_before) /
                            absl::ToDoubleSeconds(absl::Now() - idle_began);
  testing::AsyncJoins joins(stubs, job, "member-", connections, kJoinWaitMs);
  while (JoinedMembers(stubs[0], job) < static_cast<uint32_t>(connections)) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  absl::SleepFor(absl::Seconds(3));  // Every connection has pinged.
  (*probe)->TakeJson("joining");

  const double cpu_before = ProcCpuSeconds(pid);
  const double own_before = OwnCpuSeconds();
  const absl::Time began = absl::Now();
  absl::SleepFor(seconds);
  const double elapsed = absl::ToDoubleSeconds(absl::Now() - began);
  const double cores = (ProcCpuSeconds(pid) - cpu_before) / elapsed;
  const double own_cores = (OwnCpuSeconds() - own_before) / elapsed;
  const std::string heartbeats = (*probe)->TakeJson("parked");
  const double rss_mib = ProcStatusField(pid, "VmRSS") / 1024;
  const double threads = ProcStatusField(pid, "Threads");
  joins.CancelAll();
  joins.AwaitDone();
  std::printf(
      "{\"connections\":%d,\"pings\":%s,\"seconds\":%.1f,"
      "\"idle_coordinator_cores\":%.3f,"
      "\"coordinator_cores\":%.3f,\"client_cores\":%.3f,"
      "\"coordinator_rss_mib\":%.1f,\"coordinator_threads\":%.0f,%s}\n",
      connections, pings ? "true" : "false", elapsed, idle_cores, cores,
      own_cores, rss_mib, threads, heartbeats.c_str());
  return 0;
}

}  // namespace
}  // namespace shard::bench

int main(int argc, char** argv) {
  shard::sync::TuneForManyCalls();
  CLI::App app("Parked calls on many connections, pinged by the clients.");
  shard::cli::Configure(app, "shard-keepalive-load-bench");
  std::string address;
  int pid = 0, connections = 1000, seconds = 30;
  shard::cli::AddOption(app, "--coordinator", address, "HOST:PORT")->required();
  shard::cli::AddOption(app, "--coordinator-pid", pid, "the coordinator's pid")
      ->required()
      ->check(shard::cli::AtLeast(1));
  shard::cli::AddOption(app, "--connections", connections,
                        "client connections, one parked join each")
      ->check(shard::cli::AtLeast(1));
  shard::cli::AddOption(app, "--seconds", seconds, "length of the phase")
      ->check(shard::cli::AtLeast(1));
  bool no_pings = false;
  app.add_flag("--no-pings", no_pings,
               "connections without keepalive pings (a comparison)");
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  return shard::bench::Run(address, pid, connections, absl::Seconds(seconds),
                           !no_pings);
}
