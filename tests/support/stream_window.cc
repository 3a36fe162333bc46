// Streams windows of every rank's shard through the C++ client, so that a
// test can compare what a client receives with what `shardctl plan`
// (PreviewShard) says: tests/conformance/stream_plan_test.py.
//
//   shard-stream-window --coordinator ADDR --job JOB --epoch E
//                       --start-position P [--start-position P2 ...]
//                       --count K
//
// Joins the job as members "window-0" .. "window-{W-1}" (W: the job's world
// size; each join on its own thread, as the world forms only once all
// joined), then for each rank and each start position (a global position,
// a multiple of W) opens a stream there and reads up to K indices. Prints
// one line per window: "RANK START INDEX INDEX ...". Exit 0, or 1 with the
// error on stderr.
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/cli/command_line.h"
#include "shard/client/coordinator_client.h"

namespace shard::testing {
namespace {

using client::CoordinatorClient;
using client::Membership;

// Joins the job as every member of its world at once.
absl::StatusOr<std::vector<Membership>> JoinWholeWorld(
    CoordinatorClient& client, const std::string& job) {
  absl::StatusOr<shard::v1::Job> described = client.GetJob(job);
  if (!described.ok()) return described.status();
  const uint32_t world = described->spec().world_size();
  std::vector<absl::StatusOr<Membership>> joined(
      world, absl::UnknownError("not joined"));
  std::vector<std::thread> joiners;
  for (uint32_t m = 0; m < world; ++m) {
    joiners.emplace_back([&, m] {
      joined[m] = client.Join(job, absl::StrCat("window-", m), std::nullopt,
                              absl::Minutes(1));
    });
  }
  for (std::thread& joiner : joiners) joiner.join();
  std::vector<Membership> members(world);
  for (absl::StatusOr<Membership>& membership : joined) {
    if (!membership.ok()) return membership.status();
    members[membership->rank] = *std::move(membership);
  }
  return members;
}

// Up to `count` of the member's indices of `epoch` from `start`.
absl::StatusOr<std::vector<uint64_t>> ReadWindow(CoordinatorClient& client,
                                                 const Membership& member,
                                                 uint64_t epoch, uint64_t start,
                                                 uint64_t count) {
  std::vector<uint64_t> window(count);
  std::unique_ptr<client::ShardStream> stream =
      client.OpenStream(member, epoch, start);
  size_t filled = 0;
  while (filled < count) {
    absl::StatusOr<size_t> got =
        stream->Next(absl::MakeSpan(window).subspan(filled));
    if (!got.ok()) return got.status();
    if (*got == 0) break;
    filled += *got;
  }
  window.resize(filled);
  return window;
}

int Main(int argc, char** argv) {
  CLI::App app("Streams windows of every rank's shard and prints them.");
  shard::cli::Configure(app, "shard-stream-window");
  client::ClientOptions options;
  std::string job;
  uint64_t epoch = 0;
  std::vector<uint64_t> starts;
  uint64_t count = 0;
  shard::cli::AddOption(app, "--coordinator", options.address, "HOST:PORT")
      ->required();
  shard::cli::AddOption(app, "--job", job, "job id")->required();
  shard::cli::AddOption(app, "--epoch", epoch, "epoch");
  shard::cli::AddOption(app, "--start-position", starts,
                        "global start positions")
      ->required();
  shard::cli::AddOption(app, "--count", count, "indices per window")
      ->required();
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  absl::StatusOr<std::unique_ptr<CoordinatorClient>> client =
      CoordinatorClient::Connect(options);
  absl::StatusOr<std::vector<Membership>> members =
      client.ok() ? JoinWholeWorld(**client, job)
                  : absl::StatusOr<std::vector<Membership>>(client.status());
  if (!members.ok()) {
    std::fprintf(stderr, "%s\n", members.status().ToString().c_str());
    return 1;
  }
  for (const Membership& member : *members) {
    for (uint64_t start : starts) {
      absl::StatusOr<std::vector<uint64_t>> window =
          ReadWindow(**client, member, epoch, start, count);
      if (!window.ok()) {
        std::fprintf(stderr, "rank %u from %llu: %s\n", member.rank,
                     static_cast<unsigned long long>(start),
                     window.status().ToString().c_str());
        return 1;
      }
      std::string line = absl::StrCat(member.rank, " ", start);
      for (uint64_t index : *window) absl::StrAppend(&line, " ", index);
      std::printf("%s\n", line.c_str());
    }
  }
  return 0;
}

}  // namespace
}  // namespace shard::testing

int main(int argc, char** argv) { return shard::testing::Main(argc, argv); }
