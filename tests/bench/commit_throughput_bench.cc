// Commit throughput against a running shardd: M members, each the only rank
// of a job of its own, commit their progress in a closed loop (one commit in
// flight per member, the next sent when the last was answered) for S
// seconds, while an unrelated one-rank job heartbeats every 100 ms. Every
// commit moves its job forward, so each is a journal record the coordinator
// must make durable before answering. Reports commits per second, the
// commits' p50/p99/max latency, the heartbeat's p50/p99/max and the
// coordinator's threads under the load. Prints one JSON line.
//
//   shard-commit-throughput-bench --coordinator HOST:PORT
//       --coordinator-pid PID [--members 1000] [--seconds 5]
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/cli/command_line.h"
#include "grpcpp/grpcpp.h"
#include "shard/v1/shard.grpc.pb.h"
#include "tests/bench/bench_report.h"
#include "tests/bench/coordinator_load.h"

namespace shard::bench {
namespace {

constexpr int kConnections = 16;
constexpr uint64_t kDatasetSize = uint64_t{1} << 30;

// Where every member's loop reports; thread-safe.
struct Tally {
  absl::Mutex mu;
  absl::CondVar changed;
  int joined ABSL_GUARDED_BY(mu) = 0;
  int stopped ABSL_GUARDED_BY(mu) = 0;
  int failures ABSL_GUARDED_BY(mu) = 0;
  std::string first_error ABSL_GUARDED_BY(mu);
  std::vector<double> commit_ms ABSL_GUARDED_BY(mu);
};

// One member: joins its job, then commits position 1, 2, ... until `go`
// ends, one call at a time, through the callback API (no thread of its own).
class MemberLoop {
 public:
  MemberLoop(shard::v1::Coordinator::Stub* stub, int index, Tally* tally,
             const std::atomic<bool>* go, const std::atomic<bool>* stop)
      : stub_(stub), index_(index), tally_(tally), go_(go), stop_(stop) {}

  void Join() {
    join_.set_job_id(absl::StrCat("commit-bench-", index_));
    join_.set_member_id("rank0");
    join_.set_wait_for_world_ms(30000);
    join_.mutable_spec()->set_dataset_size(kDatasetSize);
    join_.mutable_spec()->set_world_size(1);
    context_ = std::make_unique<grpc::ClientContext>();
    stub_->async()->JoinJob(context_.get(), &join_, &joined_,
                            [this](grpc::Status status) { Joined(status); });
  }

  // Starts the commit loop (after every member joined).
  void Start() { Commit(); }

 private:
  void Joined(const grpc::Status& status) {
    absl::MutexLock lock(&tally_->mu);
    if (!status.ok()) Failed(status);
    ++tally_->joined;
    tally_->changed.SignalAll();
  }

  void Commit() {
    commit_.set_job_id(join_.job_id());
    commit_.set_generation(joined_.generation());
    commit_.set_epoch(0);
    commit_.set_member_id(join_.member_id());
    commit_.set_position(++position_);
    context_ = std::make_unique<grpc::ClientContext>();
    sent_ = absl::Now();
    stub_->async()->CommitProgress(
        context_.get(), &commit_, &committed_,
        [this](grpc::Status status) { Committed(status); });
  }

  void Committed(const grpc::Status& status) {
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - sent_);
    const bool stop = stop_->load();
    {
      absl::MutexLock lock(&tally_->mu);
      if (!status.ok()) {
        Failed(status);
      } else if (go_->load() && !stop) {
        tally_->commit_ms.push_back(ms);
      }
      if (stop || !status.ok()) {
        ++tally_->stopped;
        tally_->changed.SignalAll();
        return;
      }
    }
    Commit();
  }

  void Failed(const grpc::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(tally_->mu) {
    if (tally_->failures++ == 0) {
      tally_->first_error =
          absl::StrCat(join_.job_id(), ": ", status.error_message());
    }
  }

  shard::v1::Coordinator::Stub* const stub_;
  const int index_;
  Tally* const tally_;
  const std::atomic<bool>* const go_;    // Counting commits.
  const std::atomic<bool>* const stop_;  // No further commit.
  std::unique_ptr<grpc::ClientContext> context_;
  shard::v1::JoinJobRequest join_;
  shard::v1::JoinJobResponse joined_;
  shard::v1::CommitProgressRequest commit_;
  shard::v1::CommitProgressResponse committed_;
  uint64_t position_ = 0;
  absl::Time sent_;
};

int Run(const std::string& address, int pid, int members,
        absl::Duration duration) {
  const auto connections = Connect(address, kConnections);
  absl::StatusOr<std::unique_ptr<HeartbeatProbe>> heartbeats =
      HeartbeatProbe::Start(connections[0].get(), "bench-other");
  if (!heartbeats.ok()) return Fail(heartbeats.status().ToString());

  Tally tally;
  std::atomic<bool> go{false}, stop{false};
  std::vector<std::unique_ptr<MemberLoop>> loops;
  for (int i = 0; i < members; ++i) {
    loops.push_back(std::make_unique<MemberLoop>(
        connections[i % kConnections].get(), i, &tally, &go, &stop));
    loops.back()->Join();
  }
  {
    absl::MutexLock lock(&tally.mu);
    while (tally.joined < members) tally.changed.Wait(&tally.mu);
    if (tally.failures > 0) return Fail("join failed: " + tally.first_error);
  }
  std::fprintf(stderr, "%d members joined; committing for %s\n", members,
               absl::FormatDuration(duration).c_str());
  for (auto& loop : loops) loop->Start();
  absl::SleepFor(absl::Seconds(1));  // Warm-up, not counted.
  (*heartbeats)->TakeJson("warmup");
  go.store(true);
  const absl::Time began = absl::Now();
  absl::SleepFor(duration / 2);
  const double threads = ProcStatusField(pid, "Threads");
  absl::SleepFor(duration / 2);
  stop.store(true);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - began);
  const std::string load_heartbeats = (*heartbeats)->TakeJson("load");
  absl::MutexLock lock(&tally.mu);
  while (tally.stopped < members) tally.changed.Wait(&tally.mu);
  const std::vector<double> ms = tally.commit_ms;
  std::printf(
      "{\"members\":%d,\"seconds\":%.2f,\"commits\":%zu,"
      "\"commits_per_s\":%.0f,\"commit_p50_ms\":%.2f,\"commit_p99_ms\":%.2f,"
      "\"commit_max_ms\":%.2f,\"failures\":%d,%s,\"threads\":%.0f}\n",
      members, seconds, ms.size(), ms.size() / seconds, Percentile(ms, 0.5),
      Percentile(ms, 0.99), Percentile(ms, 1.0), tally.failures,
      load_heartbeats.c_str(), threads);
  if (tally.failures > 0) return Fail("commit failed: " + tally.first_error);
  return 0;
}

}  // namespace
}  // namespace shard::bench

int main(int argc, char** argv) {
  CLI::App app("Commits per second of many members against one coordinator.");
  shard::cli::Configure(app, "shard-commit-throughput-bench");
  std::string address;
  int pid = 0, members = 1000, seconds = 5;
  shard::cli::AddOption(app, "--coordinator", address, "HOST:PORT")->required();
  shard::cli::AddOption(app, "--coordinator-pid", pid, "the coordinator's pid")
      ->required()
      ->check(shard::cli::AtLeast(1));
  shard::cli::AddOption(app, "--members", members, "members committing")
      ->check(shard::cli::AtLeast(1));
  shard::cli::AddOption(app, "--seconds", seconds, "how long to measure")
      ->check(shard::cli::AtLeast(1));
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  return shard::bench::Run(address, pid, members, absl::Seconds(seconds));
}
