// The process group's rendezvous at scale, against a running shardd: W
// members join a job of world size W (the world forms), ranks 1..W-1 then
// wait in StoreGet for a key that rank 0 sets (what NCCL's and Gloo's
// bootstrap do through the coordinator's store), over 16 connections with
// gRPC's async client API (AsyncCalls: no thread per call). Reports the time
// the world took to form, the coordinator's RSS before and with the W-1
// StoreGets parked, the time from rank 0's StoreSet until every waiter had
// its value (and the median waiter), and the CPU the coordinator and this
// client spent meanwhile. Prints one JSON line.
//
//   shard-rendezvous-bench --coordinator HOST:PORT --coordinator-pid PID
//                          --ranks W
#include <algorithm>
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
constexpr uint32_t kWaitMs = 300000;
constexpr char kKey[] = "bootstrap";
// How long the waiters get to reach the coordinator before the key is set.
constexpr absl::Duration kParkTime = absl::Seconds(5);

using StoreGets = testing::AsyncCalls<shard::v1::StoreGetRequest,
                                      shard::v1::StoreGetResponse>;

bool CreateJob(shard::v1::Coordinator::Stub* stub, const std::string& id,
               uint32_t world) {
  shard::v1::CreateJobRequest request;
  request.set_job_id(id);
  request.mutable_spec()->set_dataset_size(uint64_t{world} * 10);
  request.mutable_spec()->set_world_size(world);
  shard::v1::Job job;
  grpc::ClientContext context;
  return stub->CreateJob(&context, request, &job).ok();
}

// The gets of members 1..waiters of `scope`'s generation.
std::vector<shard::v1::StoreGetRequest> WaiterRequests(
    const shard::v1::StoreScope& scope, int waiters) {
  std::vector<shard::v1::StoreGetRequest> requests(waiters);
  for (int i = 0; i < waiters; ++i) {
    shard::v1::StoreGetRequest& request = requests[i];
    *request.mutable_scope() = scope;
    request.mutable_scope()->set_member_id(absl::StrCat("member-", i + 1));
    request.set_key(kKey);
    request.set_wait_ms(kWaitMs);
  }
  return requests;
}

int Run(const std::string& address, int pid, int ranks) {
  const auto connections = Connect(address, kConnections);
  const std::vector<shard::v1::Coordinator::Stub*> stubs = StubsOf(connections);
  const std::string job = absl::StrCat("bench-rendezvous-", ranks);
  if (!CreateJob(stubs[0], job, ranks)) return Fail("cannot create job");
  const absl::Time join_began = absl::Now();
  testing::AsyncJoins joins(stubs, job, "member-", ranks, kWaitMs);
  joins.AwaitDone();
  const double form_s = absl::ToDoubleSeconds(absl::Now() - join_began);
  if (joins.ok() != static_cast<size_t>(ranks)) {
    return Fail(absl::StrCat(joins.ok(), " of ", ranks, " joins answered OK"));
  }
  shard::v1::StoreScope scope;
  scope.set_job_id(job);
  scope.set_generation(joins.response(0).generation());
  scope.set_member_id("member-0");

  const double rss_before_mib = ProcStatusField(pid, "VmRSS") / 1024;
  StoreGets waiters(WaiterRequests(scope, ranks - 1),
                    [&stubs](int i, grpc::ClientContext* context,
                             const shard::v1::StoreGetRequest& request,
                             grpc::CompletionQueue* queue) {
                      return stubs[i % stubs.size()]->PrepareAsyncStoreGet(
                          context, request, queue);
                    });
  absl::SleepFor(kParkTime);
  const double rss_parked_mib = ProcStatusField(pid, "VmRSS") / 1024;
  const size_t answered_early = waiters.finished();

  shard::v1::StoreSetRequest set;
  *set.mutable_scope() = scope;
  set.set_key(kKey);
  set.set_value("127.0.0.1:29500");
  shard::v1::StoreSetResponse set_response;
  grpc::ClientContext set_context;
  const double coordinator_cpu_before_s = ProcCpuSeconds(pid);
  const double client_cpu_before_s = OwnCpuSeconds();
  const absl::Time set_at = absl::Now();
  if (!stubs[0]->StoreSet(&set_context, set, &set_response).ok()) {
    return Fail("StoreSet failed");
  }
  waiters.AwaitDone();
  const double coordinator_cpu_s =
      ProcCpuSeconds(pid) - coordinator_cpu_before_s;
  const double client_cpu_s = OwnCpuSeconds() - client_cpu_before_s;
  std::vector<double> after_set_s;
  size_t found = 0;
  for (int i = 0; i < ranks - 1; ++i) {
    after_set_s.push_back(absl::ToDoubleSeconds(waiters.ended(i) - set_at));
    if (waiters.status(i).ok() && waiters.response(i).found()) ++found;
  }
  std::printf(
      "{\"ranks\":%d,\"form_s\":%.3f,\"waiters\":%d,\"answered_early\":%zu,"
      "\"found\":%zu,\"all_answered_s\":%.3f,\"median_answered_s\":%.3f,"
      "\"rss_before_mib\":%.1f,\"rss_parked_mib\":%.1f,"
      "\"fan_out_coordinator_cpu_s\":%.2f,\"fan_out_client_cpu_s\":%.2f}\n",
      ranks, form_s, ranks - 1, answered_early, found,
      *std::max_element(after_set_s.begin(), after_set_s.end()),
      Percentile(after_set_s, 0.5), rss_before_mib, rss_parked_mib,
      coordinator_cpu_s, client_cpu_s);
  return found == static_cast<size_t>(ranks - 1) ? 0 : 1;
}

}  // namespace
}  // namespace shard::bench

int main(int argc, char** argv) {
  shard::sync::TuneForManyCalls();
  CLI::App app("Times a key set by rank 0 reaching W-1 waiting ranks.");
  shard::cli::Configure(app, "shard-rendezvous-bench");
  std::string address;
  int pid = 0, ranks = 1000;
  shard::cli::AddOption(app, "--coordinator", address, "HOST:PORT")->required();
  shard::cli::AddOption(app, "--coordinator-pid", pid, "the coordinator's pid")
      ->required()
      ->check(shard::cli::AtLeast(1));
  shard::cli::AddOption(app, "--ranks", ranks, "ranks of the job")
      ->check(shard::cli::AtLeast(2));
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  return shard::bench::Run(address, pid, ranks);
}
