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

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "client/coordinator_client.h"
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
  uint64_t total = 0;
  while (true) {
    absl::StatusOr<size_t> got = stream->Next(absl::MakeSpan(batch));
    if (!got.ok()) return Fail(got.status().ToString());
    if (total == 0) first = Clock::now();
    if (*got == 0) break;
    total += *got;
  }
  Report("shard", Seconds(start, first), Seconds(start, Clock::now()), total);
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
  std::string address, job;
  uint64_t world = 8, epoch = 0, chunk = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    bool ok = true;
    if (flag == "--coordinator") {
      address = value;
    } else if (flag == "--job") {
      job = value;
    } else if (flag == "--world-size") {
      ok = absl::SimpleAtoi(value, &world);
    } else if (flag == "--epoch") {
      ok = absl::SimpleAtoi(value, &epoch);
    } else if (flag == "--chunk-indices") {
      ok = absl::SimpleAtoi(value, &chunk);
    } else {
      return shard::bench::Fail("unknown flag " + flag);
    }
    if (!ok) return shard::bench::Fail("bad value for " + flag);
  }
  if (address.empty() || job.empty()) {
    return shard::bench::Fail(
        "usage: --coordinator HOST:PORT --job ID --world-size W [--epoch E] "
        "[--chunk-indices C]");
  }
  return shard::bench::Run(address, job, static_cast<uint32_t>(world), epoch,
                           static_cast<uint32_t>(chunk));
}
