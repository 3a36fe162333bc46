// One rank of a shardd job, measured in its own process (no libtorch linked)
// so that peak RSS is the client sampler's alone. Prints bench_report.h's
// JSON line.
//
//   shard-sampler-bench --coordinator HOST:PORT --job ID --world-size W
//                       [--epoch E] [--chunk-indices C]
// joins the job as W members (threads), then streams rank 0's shard of
// epoch E through the client library. The clock starts when the stream is
// opened (the coordinator computes the epoch order then, unless it prepared
// it in the background).
#include <future>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cli/command_line.h"
#include "shard/client/coordinator_client.h"
#include "tests/bench/bench_report.h"

namespace shard::bench {
namespace {

int Run(const std::string& address, const std::string& job, uint32_t world,
        uint64_t epoch, uint32_t chunk_indices) {
  client::ClientOptions options;
  options.address = address;
  auto client = client::CoordinatorClient::Connect(options);
  if (!client.ok()) return Fail(client.status().ToString());
  std::vector<std::future<absl::StatusOr<client::Membership>>> joins;
  for (uint32_t i = 0; i < world; ++i) {
    joins.push_back(std::async(std::launch::async, [&, i] {
      return (*client)->Join(job, absl::StrCat("bench-", i), std::nullopt,
                             absl::Seconds(60));
    }));
  }
  client::Membership rank0;
  std::vector<client::Membership> members;
  for (auto& join : joins) {
    absl::StatusOr<client::Membership> m = join.get();
    if (!m.ok()) return Fail(m.status().ToString());
    if (m->rank == 0) rank0 = *m;
    members.push_back(*m);
  }
  std::vector<uint64_t> batch(4096);
  const Clock::time_point start = Clock::now();
  client::StreamOptions stream_options;
  stream_options.chunk_indices = chunk_indices;
  auto stream = (*client)->OpenStream(rank0, epoch, 0, stream_options);
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
  // Leave, so that the next run's members (same ids, new process) form a
  // new world instead of being taken for restarts of these.
  for (const client::Membership& m : members) {
    (*client)->Leave(m).IgnoreError();
  }
  return 0;
}

}  // namespace
}  // namespace shard::bench

int main(int argc, char** argv) {
  CLI::App app("Streams one epoch of every rank through the C++ sampler.");
  shard::cli::Configure(app, "shard-sampler-bench");
  std::string address, job;
  uint32_t world = 8, chunk = 0;
  uint64_t epoch = 0;
  shard::cli::AddOption(app, "--coordinator", address, "HOST:PORT")->required();
  shard::cli::AddOption(app, "--job", job, "job id")->required();
  shard::cli::AddOption(app, "--world-size", world, "ranks");
  shard::cli::AddOption(app, "--epoch", epoch, "epoch");
  shard::cli::AddOption(app, "--chunk-indices", chunk,
                        "indices per chunk (0: default)");
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  return shard::bench::Run(address, job, world, epoch, chunk);
}
