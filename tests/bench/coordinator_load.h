// Shared by the coordinator load benchmarks (join storm, commit
// throughput): connections, one member of its own job heartbeating every
// 100 ms while the load runs (each call timed), percentiles and the
// coordinator's /proc figures.
#ifndef TESTS_BENCH_COORDINATOR_LOAD_H_
#define TESTS_BENCH_COORDINATOR_LOAD_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/support/channel_arguments.h"
#include "shard/v1/shard.grpc.pb.h"

namespace shard::bench {

// `connections` stubs to `address`, each on a TCP connection of its own,
// with `args` besides.
std::vector<std::unique_ptr<shard::v1::Coordinator::Stub>> Connect(
    const std::string& address, int connections,
    const grpc::ChannelArguments& args = {});

// Creates job `job_id` of world size `world` (10 samples a rank); false if
// CreateJob fails.
bool CreateJob(shard::v1::Coordinator::Stub* stub, const std::string& job_id,
               uint32_t world);

// A heartbeat of member `member_id` of `generation` of job `job_id`.
shard::v1::HeartbeatRequest HeartbeatOf(const std::string& job_id,
                                        const std::string& member_id,
                                        uint64_t generation);

// The stubs of `connections`, not owned.
std::vector<shard::v1::Coordinator::Stub*> StubsOf(
    const std::vector<std::unique_ptr<shard::v1::Coordinator::Stub>>&
        connections);

// The members joined to job `job_id` now (all W joins of a job that waits
// for more reached the coordinator once it counts W: each is then
// parked); 0 if GetJob fails.
uint32_t JoinedMembers(shard::v1::Coordinator::Stub* stub,
                       const std::string& job_id);

// The q-quantile (0..1) of `values`; 0 for none.
double Percentile(std::vector<double> values, double q);

// A /proc/PID/status field in the units it is given (kB for memory); -1
// when it cannot be read.
double ProcStatusField(int pid, const std::string& name);

// The user + system CPU time of process `pid` so far, in seconds.
double ProcCpuSeconds(int pid);

// The same of this process.
double OwnCpuSeconds();

// Creates the one-rank job `job_id`, joins it as "other" and heartbeats
// every 100 ms on a thread of its own until destroyed. Thread-safe.
class HeartbeatProbe {
 public:
  // The probe's job and its formed world; the error of the create or join.
  static absl::StatusOr<std::unique_ptr<HeartbeatProbe>> Start(
      shard::v1::Coordinator::Stub* stub, const std::string& job_id);
  ~HeartbeatProbe();

  // Latencies (ms) of the calls since the last Take, and their failures.
  std::vector<double> Take(int* failures) ABSL_LOCKS_EXCLUDED(mu_);
  // {"<prefix>_hb_p50_ms":..., p99, max, count, failures} members (no
  // braces) of what Take returns.
  std::string TakeJson(const std::string& prefix) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  HeartbeatProbe(shard::v1::Coordinator::Stub* stub, std::string job_id,
                 uint64_t generation);
  void Run();

  shard::v1::Coordinator::Stub* const stub_;
  const std::string job_id_;
  const uint64_t generation_;
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  std::vector<double> latencies_ms_ ABSL_GUARDED_BY(mu_);
  int failures_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace shard::bench

#endif  // TESTS_BENCH_COORDINATOR_LOAD_H_
