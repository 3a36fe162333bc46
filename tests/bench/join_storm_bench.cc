// Join storm and waiting-call load against a running shardd, while an
// unrelated one-rank job heartbeats every 100 ms. Two phases for W joins:
//
//   storm:   W members join a job of world size W at once (gRPC callback
//            client API over 16 connections, no thread per call); reports
//            the time until every join was answered with the formed world.
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
#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "client/cli_flags.h"
#include "grpcpp/grpcpp.h"
#include "shard/v1/shard.grpc.pb.h"
#include "tests/bench/bench_report.h"
#include "tests/support/async_joins.h"

namespace shard::bench {
namespace {

constexpr int kConnections = 16;
constexpr uint32_t kJoinWaitMs = 300000;

// A /proc/PID/status field in the units it is given (kB for memory).
double StatusField(int pid, const std::string& name) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(name + ":", 0) == 0) {
      return std::stod(line.substr(name.size() + 1));
    }
  }
  return -1;
}

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1,
                         static_cast<size_t>(q * values.size()))];
}

std::vector<std::unique_ptr<shard::v1::Coordinator::Stub>> Connect(
    const std::string& address) {
  std::vector<std::unique_ptr<shard::v1::Coordinator::Stub>> stubs;
  for (int i = 0; i < kConnections; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("shard.bench.connection", i);  // One TCP connection each.
    stubs.push_back(shard::v1::Coordinator::NewStub(grpc::CreateCustomChannel(
        address, grpc::InsecureChannelCredentials(), args)));
  }
  return stubs;
}

// Heartbeats of one member of its own job every 100 ms, timed.
class Heartbeater {
 public:
  Heartbeater(shard::v1::Coordinator::Stub* stub, uint64_t generation)
      : stub_(stub), generation_(generation), thread_([this] { Run(); }) {}
  ~Heartbeater() {
    stop_.store(true);
    thread_.join();
  }
  // Latencies (ms) since the last call, and failures.
  std::vector<double> Take(int* failures) {
    absl::MutexLock lock(&mu_);
    *failures = failures_;
    failures_ = 0;
    return std::exchange(latencies_ms_, {});
  }

 private:
  void Run() {
    while (!stop_.load()) {
      shard::v1::HeartbeatRequest request;
      request.set_job_id("bench-other");
      request.set_member_id("other");
      request.set_generation(generation_);
      shard::v1::HeartbeatResponse response;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::seconds(60));
      const absl::Time began = absl::Now();
      const grpc::Status status =
          stub_->Heartbeat(&context, request, &response);
      const double ms = absl::ToDoubleMilliseconds(absl::Now() - began);
      {
        absl::MutexLock lock(&mu_);
        latencies_ms_.push_back(ms);
        if (!status.ok()) ++failures_;
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
  }

  shard::v1::Coordinator::Stub* stub_;
  const uint64_t generation_;
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  std::vector<double> latencies_ms_ ABSL_GUARDED_BY(mu_);
  int failures_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

bool CreateJob(shard::v1::Coordinator::Stub* stub, const std::string& id,
               uint32_t world) {
  shard::v1::CreateJobRequest request;
  request.set_job_id(id);
  request.mutable_spec()->set_dataset_size(uint64_t{world} * 10 + 10);
  request.mutable_spec()->set_world_size(world);
  shard::v1::Job job;
  grpc::ClientContext context;
  return stub->CreateJob(&context, request, &job).ok();
}

// Members joined to the job (all W joins reached the coordinator once it
// counts W: each is then parked).
uint32_t JoinedMembers(shard::v1::Coordinator::Stub* stub,
                       const std::string& id) {
  shard::v1::GetJobRequest request;
  request.set_job_id(id);
  shard::v1::Job job;
  grpc::ClientContext context;
  if (!stub->GetJob(&context, request, &job).ok()) return 0;
  return job.joined_members();
}

std::string LatencyJson(const std::string& prefix,
                        const std::vector<double>& ms, int failures) {
  return absl::StrCat("\"", prefix, "_hb_p50_ms\":", Percentile(ms, 0.5), ",\"",
                      prefix, "_hb_p99_ms\":", Percentile(ms, 0.99), ",\"",
                      prefix, "_hb_max_ms\":", Percentile(ms, 1.0), ",\"",
                      prefix, "_hb_count\":", ms.size(), ",\"", prefix,
                      "_hb_failures\":", failures);
}

int Run(const std::string& address, int pid, int joins) {
  const auto connections = Connect(address);
  std::vector<shard::v1::Coordinator::Stub*> stubs;
  for (const auto& stub : connections) stubs.push_back(stub.get());
  shard::v1::Coordinator::Stub* control = stubs[0];
  if (!CreateJob(control, "bench-other", 1)) {
    return Fail("cannot create the heartbeating job");
  }
  shard::v1::JoinJobRequest join;
  join.set_job_id("bench-other");
  join.set_member_id("other");
  shard::v1::JoinJobResponse joined;
  grpc::ClientContext join_context;
  if (!control->JoinJob(&join_context, join, &joined).ok()) {
    return Fail("cannot join the heartbeating job");
  }
  Heartbeater heartbeats(control, joined.generation());
  absl::SleepFor(absl::Seconds(1));
  int failures = 0;
  heartbeats.Take(&failures);

  // Phase 1: a world of W forms.
  const std::string storm_job = absl::StrCat("bench-storm-", joins);
  if (!CreateJob(control, storm_job, joins)) return Fail("cannot create job");
  const absl::Time storm_began = absl::Now();
  size_t formed = 0;
  {
    testing::AsyncJoins storm(stubs, storm_job, "member-", joins, kJoinWaitMs);
    storm.AwaitDone();
    formed = storm.ok();
  }
  const double form_s = absl::ToDoubleSeconds(absl::Now() - storm_began);
  int storm_failures = 0;
  const std::vector<double> storm_ms = heartbeats.Take(&storm_failures);

  // Phase 2: W joins stay parked.
  const std::string wait_job = absl::StrCat("bench-wait-", joins);
  if (!CreateJob(control, wait_job, joins + 1)) return Fail("cannot create");
  const double threads_before = StatusField(pid, "Threads");
  double threads_waiting = 0, rss_waiting_mib = 0, cancel_s = 0;
  double threads_after_cancel = 0;
  std::vector<double> wait_ms;
  int wait_failures = 0;
  {
    testing::AsyncJoins waiting(stubs, wait_job, "member-", joins, kJoinWaitMs);
    while (JoinedMembers(control, wait_job) < static_cast<uint32_t>(joins)) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    heartbeats.Take(&wait_failures);
    absl::SleepFor(absl::Seconds(3));  // Heartbeats under the parked load.
    wait_ms = heartbeats.Take(&wait_failures);
    threads_waiting = StatusField(pid, "Threads");
    rss_waiting_mib = StatusField(pid, "VmRSS") / 1024;
    const absl::Time cancel_began = absl::Now();
    waiting.CancelAll();
    waiting.AwaitDone();
    cancel_s = absl::ToDoubleSeconds(absl::Now() - cancel_began);
    absl::SleepFor(absl::Seconds(1));
    threads_after_cancel = StatusField(pid, "Threads");
  }
  std::printf(
      "{\"joins\":%d,\"formed\":%zu,\"form_s\":%.3f,%s,\"threads_before\":%.0f,"
      "\"threads_waiting\":%.0f,\"rss_waiting_mib\":%.1f,%s,"
      "\"cancel_all_s\":%.3f,\"threads_after_cancel\":%.0f}\n",
      joins, formed, form_s,
      LatencyJson("storm", storm_ms, storm_failures).c_str(), threads_before,
      threads_waiting, rss_waiting_mib,
      LatencyJson("waiting", wait_ms, wait_failures).c_str(), cancel_s,
      threads_after_cancel);
  return formed == static_cast<size_t>(joins) ? 0 : 1;
}

}  // namespace
}  // namespace shard::bench

int main(int argc, char** argv) {
  auto flags = shard::cli::CliFlags::Parse(
      std::vector<std::string>(argv + 1, argv + argc),
      {"coordinator", "coordinator-pid", "joins"});
  if (!flags.ok()) return shard::bench::Fail(flags.status().ToString());
  absl::StatusOr<std::string> address = flags->String("coordinator");
  absl::StatusOr<uint64_t> pid = flags->Uint64("coordinator-pid");
  absl::StatusOr<uint64_t> joins = flags->Uint64("joins", 1000);
  for (const absl::Status& s :
       {address.status(), pid.status(), joins.status()}) {
    if (!s.ok()) return shard::bench::Fail(s.ToString());
  }
  if (*joins == 0 || *pid == 0) {
    return shard::bench::Fail("--joins and --coordinator-pid must be > 0");
  }
  return shard::bench::Run(*address, static_cast<int>(*pid),
                           static_cast<int>(*joins));
}
