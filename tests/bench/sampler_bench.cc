// One rank of a shardd job, measured in its own process (no libtorch linked)
// so that peak RSS is the client sampler's alone. Prints bench_report.h's
// JSON line.
//
//   shard-sampler-bench --coordinator HOST:PORT --job ID --world-size W
//                       [--epoch E] [--chunk-indices C]
//                       [--warm-epochs K [--warm-patterns open,drained,closed]
//                        [--epoch-pauses-ms 300,1000,2000]]
// joins the job as W members (threads), then streams rank 0's shard of
// epoch E through the client library. The clock starts when the stream is
// opened (the coordinator computes the epoch order then, unless it prepared
// it in the background). With --warm-epochs, rank 0 instead opens epochs
// E, E + 1, ..., E + K and reads each one's first batch; then epoch e
// (the e-th of the run) is left as --warm-patterns' e-th entry says
// (cycling): "open" keeps its stream open until the next one is open,
// "drained" reads the rest of its shard, "closed" closes it; then rank 0
// waits --epoch-pauses-ms' e-th entry (cycling) before it opens the next.
// No commits: the coordinator learns of a new epoch only from the stream.
// Prints {"mode":"warm","first_index_ms":[...]}, the time to the first
// index of each of the K epochs after E.
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/cli/command_line.h"
#include "shard/client/coordinator_client.h"
#include "shard/client/heartbeater.h"
#include "tests/bench/bench_report.h"

namespace shard::bench {
namespace {

// The job's W members, joined at once; rank 0 in *rank0.
absl::StatusOr<std::vector<client::Membership>> JoinAll(
    client::CoordinatorClient& client, const std::string& job, uint32_t world,
    client::Membership* rank0) {
  std::vector<std::future<absl::StatusOr<client::Membership>>> joins;
  for (uint32_t i = 0; i < world; ++i) {
    joins.push_back(std::async(std::launch::async, [&, i] {
      return client.Join(job, absl::StrCat("bench-", i), std::nullopt,
                         absl::Seconds(60));
    }));
  }
  std::vector<client::Membership> members;
  for (auto& join : joins) {
    absl::StatusOr<client::Membership> m = join.get();
    if (!m.ok()) return m.status();
    if (m->rank == 0) *rank0 = *m;
    members.push_back(*m);
  }
  return members;
}

// Streams rank 0's shard of `epoch`: the report line.
int Drain(client::CoordinatorClient& client, const client::Membership& rank0,
          uint64_t epoch, uint32_t chunk_indices) {
  std::vector<uint64_t> batch(4096);
  const Clock::time_point start = Clock::now();
  client::StreamOptions stream_options;
  stream_options.chunk_indices = chunk_indices;
  auto stream = client.OpenStream(rank0, epoch, 0, stream_options);
  Clock::time_point first;
  uint64_t total = 0, checksum = 0;
  while (true) {
    absl::StatusOr<size_t> got = stream->Next(absl::MakeSpan(batch));
    if (!got.ok()) return Fail(got.status().ToString());
    if (total == 0) first = Clock::now();
    if (*got == 0) break;
    for (size_t i = 0; i < *got; ++i) checksum += (total + i + 1) * batch[i];
    total += *got;
  }
  Report("shard", Seconds(start, first), Seconds(start, Clock::now()), total,
         checksum);
  return 0;
}

// How rank 0 leaves an epoch before the pause (see the header).
enum class Leave { kOpen, kDrained, kClosed };

absl::StatusOr<Leave> ParseLeave(const std::string& name) {
  if (name == "open") return Leave::kOpen;
  if (name == "drained") return Leave::kDrained;
  if (name == "closed") return Leave::kClosed;
  return absl::InvalidArgumentError(absl::StrCat(
      "--warm-patterns: \"", name, "\" is none of open, drained, closed"));
}

// What rank 0 does in each epoch of a warm run, cycling through both lists.
struct WarmSchedule {
  std::vector<Leave> leaves;
  std::vector<absl::Duration> pauses;
};

// Reads `stream` to its end.
absl::Status ReadToEnd(client::ShardStream& stream,
                       std::vector<uint64_t>& batch) {
  while (true) {
    absl::StatusOr<size_t> got = stream.Next(absl::MakeSpan(batch));
    if (!got.ok()) return got.status();
    if (*got == 0) return absl::OkStatus();
  }
}

// Opens epochs first .. first + count as `schedule` says: the warm report
// line.
int WarmEpochs(client::CoordinatorClient& client,
               const client::Membership& rank0, uint64_t first, uint64_t count,
               const WarmSchedule& schedule) {
  std::vector<uint64_t> batch(4096);
  std::unique_ptr<client::ShardStream> kept_open;
  std::string latencies;
  for (uint64_t epoch = first; epoch <= first + count; ++epoch) {
    const Clock::time_point opened = Clock::now();
    auto stream = client.OpenStream(rank0, epoch, 0, {});
    absl::StatusOr<size_t> got = stream->Next(absl::MakeSpan(batch));
    if (!got.ok()) return Fail(got.status().ToString());
    const double ms = Seconds(opened, Clock::now()) * 1e3;
    if (epoch > first) {
      absl::StrAppend(&latencies, latencies.empty() ? "" : ",", ms);
    }
    kept_open.reset();  // The previous epoch's, once this one is open.
    const uint64_t step = epoch - first;
    switch (schedule.leaves[step % schedule.leaves.size()]) {
      case Leave::kOpen:
        kept_open = std::move(stream);
        break;
      case Leave::kDrained:
        if (absl::Status s = ReadToEnd(*stream, batch); !s.ok()) {
          return Fail(s.ToString());
        }
        break;
      case Leave::kClosed:
        break;
    }
    stream.reset();
    absl::SleepFor(schedule.pauses[step % schedule.pauses.size()]);
  }
  std::printf("{\"mode\":\"warm\",\"first_index_ms\":[%s]}\n",
              latencies.c_str());
  return 0;
}

int Run(const std::string& address, const std::string& job, uint32_t world,
        uint64_t epoch, uint32_t chunk_indices, uint64_t warm_epochs,
        const WarmSchedule& schedule) {
  client::ClientOptions options;
  options.address = address;
  absl::StatusOr<std::unique_ptr<client::CoordinatorClient>> connected =
      client::CoordinatorClient::Connect(options);
  if (!connected.ok()) return Fail(connected.status().ToString());
  const std::shared_ptr<client::CoordinatorClient> client =
      *std::move(connected);
  client::Membership rank0;
  absl::StatusOr<std::vector<client::Membership>> members =
      JoinAll(*client, job, world, &rank0);
  if (!members.ok()) return Fail(members.status().ToString());
  int exit_code;
  if (warm_epochs > 0) {
    // The run outlasts a lease: the members stay alive.
    std::vector<std::unique_ptr<client::Heartbeater>> heartbeats;
    for (const client::Membership& m : *members) {
      heartbeats.push_back(
          std::make_unique<client::Heartbeater>(client, m, absl::Seconds(2)));
    }
    exit_code = WarmEpochs(*client, rank0, epoch, warm_epochs, schedule);
  } else {
    exit_code = Drain(*client, rank0, epoch, chunk_indices);
  }
  // Leave, so that the next run's members (same ids, new process) form a
  // new world instead of being taken for restarts of these.
  for (const client::Membership& m : *members) {
    client->Leave(m).IgnoreError();
  }
  return exit_code;
}

}  // namespace
}  // namespace shard::bench

int main(int argc, char** argv) {
  CLI::App app("Streams one epoch of every rank through the C++ sampler.");
  shard::cli::Configure(app, "shard-sampler-bench");
  std::string address, job;
  uint32_t world = 8, chunk = 0;
  uint64_t epoch = 0, warm_epochs = 0;
  std::vector<std::string> patterns = {"open"};
  std::vector<uint32_t> pauses_ms = {1000};
  shard::cli::AddOption(app, "--coordinator", address, "HOST:PORT")->required();
  shard::cli::AddOption(app, "--job", job, "job id")->required();
  shard::cli::AddOption(app, "--world-size", world, "ranks");
  shard::cli::AddOption(app, "--epoch", epoch, "epoch");
  shard::cli::AddOption(app, "--chunk-indices", chunk,
                        "indices per chunk (0: default)");
  shard::cli::AddOption(app, "--warm-epochs", warm_epochs,
                        "open this many epochs after --epoch, timing each "
                        "one's first index");
  shard::cli::AddOption(app, "--warm-patterns", patterns,
                        "how each epoch is left: open, drained or closed "
                        "(comma-separated, cycled)")
      ->delimiter(',');
  shard::cli::AddOption(app, "--epoch-pauses-ms", pauses_ms,
                        "pause before each next epoch, in ms "
                        "(comma-separated, cycled)")
      ->delimiter(',');
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  shard::bench::WarmSchedule schedule;
  for (const std::string& pattern : patterns) {
    absl::StatusOr<shard::bench::Leave> leave =
        shard::bench::ParseLeave(pattern);
    if (!leave.ok()) return shard::bench::Fail(leave.status().ToString());
    schedule.leaves.push_back(*leave);
  }
  for (uint32_t ms : pauses_ms) {
    schedule.pauses.push_back(absl::Milliseconds(ms));
  }
  return shard::bench::Run(address, job, world, epoch, chunk, warm_epochs,
                           schedule);
}
