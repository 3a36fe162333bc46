// Drives one call of the C++ client (shard::client::CoordinatorClient) so
// that a test can watch what it sends: tests/python/client_parity_test.py
// runs it against a fake coordinator to check the clients' table
// (proto/shard/v1/client_retries.json). Prints the call's status code name.
//
//   shard-client-probe --coordinator ADDR --call RPC [--retry-deadline 1s]
//   shard-client-probe --coordinator ADDR --heartbeat-for 1s
//                      [--interval 50ms]
//
// --call makes the client method behind RPC (a shard.v1.Coordinator method
// name) once, with placeholder arguments (StreamShard: opens a stream and
// reads its first index); --heartbeat-for runs a
// Heartbeater that long and prints its status().
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "common/cli/command_line.h"
#include "shard/client/coordinator_client.h"
#include "shard/client/heartbeater.h"

namespace shard::testing {
namespace {

using client::CoordinatorClient;

absl::Status CallByName(CoordinatorClient& c, const std::string& rpc) {
  client::Membership m;
  m.job_id = "probe";
  m.member_id = "member";
  m.generation = 1;
  const std::map<std::string, std::function<absl::Status()>> calls = {
      {"CreateJob", [&] { return c.CreateJob("probe", {}).status(); }},
      {"GetJob", [&] { return c.GetJob("probe").status(); }},
      {"ListJobs", [&] { return c.ListJobs().status(); }},
      {"DeleteJob", [&] { return c.DeleteJob("probe", false); }},
      {"PutCosts",
       [&] { return c.PutCosts(std::string(64, '0'), std::string(4, '\0')); }},
      {"JoinJob",
       [&] {
         return c.Join("probe", "member", std::nullopt, absl::ZeroDuration())
             .status();
       }},
      {"PreviewShard", [&] { return c.Preview("probe", 0, 0, 0, 1).status(); }},
      {"Heartbeat", [&] { return c.Heartbeat(m); }},
      {"Leave", [&] { return c.Leave(m); }},
      {"CommitProgress", [&] { return c.CommitProgress(m, 0, 0).status(); }},
      {"Drain", [&] { return c.Drain().status(); }},
      {"StoreSet", [&] { return c.StoreSet(m, "k", "v"); }},
      {"StoreGet",
       [&] { return c.StoreGet(m, "k", absl::ZeroDuration()).status(); }},
      {"StoreAdd", [&] { return c.StoreAdd(m, "k", 1).status(); }},
      {"StoreCompareSet",
       [&] { return c.StoreCompareSet(m, "k", "", "v").status(); }},
      {"StoreWait",
       [&] { return c.StoreWait(m, {"k"}, absl::ZeroDuration()).status(); }},
      {"StoreDelete", [&] { return c.StoreDelete(m, "k").status(); }},
      {"StoreCount", [&] { return c.StoreCount(m).status(); }},
      {"StreamShard",
       [&] {
         uint64_t first;
         return c.OpenStream(m, 0, 0)->Next(absl::MakeSpan(&first, 1)).status();
       }},
  };
  auto call = calls.find(rpc);
  if (call == calls.end()) {
    return absl::InvalidArgumentError("the probe has no call " + rpc);
  }
  return call->second();
}

int Main(int argc, char** argv) {
  CLI::App app("Makes one client call (or heartbeats) and prints its code.");
  shard::cli::Configure(app, "shard-client-probe");
  client::ClientOptions options;
  std::string call;
  absl::Duration heartbeat_for = absl::ZeroDuration();
  absl::Duration interval = absl::Milliseconds(50);
  options.retry.deadline = absl::Seconds(1);
  shard::cli::AddOption(app, "--coordinator", options.address, "HOST:PORT")
      ->required();
  shard::cli::AddOption(app, "--call", call, "the RPC to make");
  shard::cli::AddDuration(app, "--retry-deadline", &options.retry.deadline,
                          "retry deadline");
  shard::cli::AddDuration(app, "--heartbeat-for", &heartbeat_for,
                          "heartbeat this long instead of calling");
  shard::cli::AddDuration(app, "--interval", &interval, "heartbeat interval");
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  options.rpc_timeout = absl::Seconds(5);
  absl::StatusOr<std::unique_ptr<CoordinatorClient>> connected =
      CoordinatorClient::Connect(options);
  if (!connected.ok()) {
    std::fprintf(stderr, "%s\n", connected.status().ToString().c_str());
    return 2;
  }
  std::shared_ptr<CoordinatorClient> shared = *std::move(connected);
  absl::Status status;
  if (heartbeat_for > absl::ZeroDuration()) {
    client::Membership m;
    m.job_id = "probe";
    m.member_id = "member";
    m.generation = 1;
    client::Heartbeater heartbeater(shared, m, interval);
    absl::SleepFor(heartbeat_for);
    status = heartbeater.status();
  } else {
    status = CallByName(*shared, call);
  }
  std::printf("%s\n", absl::StatusCodeToString(status.code()).c_str());
  return 0;
}

}  // namespace
}  // namespace shard::testing

int main(int argc, char** argv) { return shard::testing::Main(argc, argv); }
