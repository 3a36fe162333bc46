#include "tests/bench/coordinator_load.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"

namespace shard::bench {

std::vector<std::unique_ptr<shard::v1::Coordinator::Stub>> Connect(
    const std::string& address, int connections,
    const grpc::ChannelArguments& args) {
  std::vector<std::unique_ptr<shard::v1::Coordinator::Stub>> stubs;
  for (int i = 0; i < connections; ++i) {
    grpc::ChannelArguments own = args;
    own.SetInt("shard.bench.connection", i);  // One TCP connection each.
    stubs.push_back(shard::v1::Coordinator::NewStub(grpc::CreateCustomChannel(
        address, grpc::InsecureChannelCredentials(), own)));
  }
  return stubs;
}

double OwnCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 +
         usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

std::vector<shard::v1::Coordinator::Stub*> StubsOf(
    const std::vector<std::unique_ptr<shard::v1::Coordinator::Stub>>&
        connections) {
  std::vector<shard::v1::Coordinator::Stub*> stubs;
  for (const auto& stub : connections) stubs.push_back(stub.get());
  return stubs;
}

bool CreateJob(shard::v1::Coordinator::Stub* stub, const std::string& job_id,
               uint32_t world) {
  shard::v1::CreateJobRequest request;
  request.set_job_id(job_id);
  request.mutable_spec()->set_dataset_size(uint64_t{world} * 10 + 10);
  request.mutable_spec()->set_world_size(world);
  shard::v1::Job job;
  grpc::ClientContext context;
  return stub->CreateJob(&context, request, &job).ok();
}

shard::v1::HeartbeatRequest HeartbeatOf(const std::string& job_id,
                                        const std::string& member_id,
                                        uint64_t generation) {
  shard::v1::HeartbeatRequest request;
  request.set_job_id(job_id);
  request.set_member_id(member_id);
  request.set_generation(generation);
  return request;
}

uint32_t JoinedMembers(shard::v1::Coordinator::Stub* stub,
                       const std::string& job_id) {
  shard::v1::GetJobRequest request;
  request.set_job_id(job_id);
  shard::v1::Job job;
  grpc::ClientContext context;
  if (!stub->GetJob(&context, request, &job).ok()) return 0;
  return job.joined_members();
}

double Percentile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1,
                         static_cast<size_t>(q * values.size()))];
}

double ProcStatusField(int pid, const std::string& name) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(name + ":", 0) == 0) {
      return std::stod(line.substr(name.size() + 1));
    }
  }
  return -1;
}

double ProcCpuSeconds(int pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  const std::string text((std::istreambuf_iterator<char>(stat)), {});
  // Fields after the ")" of the command name: state is field 3; utime and
  // stime are fields 14 and 15.
  std::istringstream rest(text.substr(text.rfind(')') + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::stod(field);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

absl::StatusOr<std::unique_ptr<HeartbeatProbe>> HeartbeatProbe::Start(
    shard::v1::Coordinator::Stub* stub, const std::string& job_id) {
  shard::v1::JoinJobRequest join;
  join.set_job_id(job_id);
  join.set_member_id("other");
  join.set_wait_for_world_ms(10000);
  join.mutable_spec()->set_dataset_size(100);
  join.mutable_spec()->set_world_size(1);
  shard::v1::JoinJobResponse joined;
  grpc::ClientContext context;
  const grpc::Status status = stub->JoinJob(&context, join, &joined);
  if (!status.ok()) {
    return absl::UnavailableError(absl::StrCat(
        "cannot join the heartbeating job: ", status.error_message()));
  }
  return std::unique_ptr<HeartbeatProbe>(
      new HeartbeatProbe(stub, job_id, joined.generation()));
}

HeartbeatProbe::HeartbeatProbe(shard::v1::Coordinator::Stub* stub,
                               std::string job_id, uint64_t generation)
    : stub_(stub),
      job_id_(std::move(job_id)),
      generation_(generation),
      thread_([this] { Run(); }) {}

HeartbeatProbe::~HeartbeatProbe() {
  stop_.store(true);
  thread_.join();
}

std::vector<double> HeartbeatProbe::Take(int* failures) {
  absl::MutexLock lock(&mu_);
  *failures = std::exchange(failures_, 0);
  return std::exchange(latencies_ms_, {});
}

std::string HeartbeatProbe::TakeJson(const std::string& prefix) {
  int failures = 0;
  const std::vector<double> ms = Take(&failures);
  return absl::StrCat("\"", prefix, "_hb_p50_ms\":", Percentile(ms, 0.5), ",\"",
                      prefix, "_hb_p99_ms\":", Percentile(ms, 0.99), ",\"",
                      prefix, "_hb_max_ms\":", Percentile(ms, 1.0), ",\"",
                      prefix, "_hb_count\":", ms.size(), ",\"", prefix,
                      "_hb_failures\":", failures);
}

void HeartbeatProbe::Run() {
  while (!stop_.load()) {
    const shard::v1::HeartbeatRequest request =
        HeartbeatOf(job_id_, "other", generation_);
    shard::v1::HeartbeatResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::seconds(60));
    const absl::Time began = absl::Now();
    const grpc::Status status = stub_->Heartbeat(&context, request, &response);
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - began);
    {
      absl::MutexLock lock(&mu_);
      latencies_ms_.push_back(ms);
      if (!status.ok()) ++failures_;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

}  // namespace shard::bench
