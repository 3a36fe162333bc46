// Coordinator at scale: R ranks (threads over several connections, as many
// trainer processes would open) join one job and stream one epoch at once.
// Prints one JSON line:
//   {"ranks":R, "indices":..., "wall_s":..., "aggregate_indices_per_s":...,
//    "coordinator_cpu_s":..., "coordinator_cpu_s_per_1e9":...,
//    "coordinator_peak_rss_mib":..., "rank_drain_median_s":...,
//    "rank_drain_max_s":..., "slowest_over_median":...}
// The epoch order is computed (one PreviewShard) before the streaming phase
// and reported as order_s. The coordinator's CPU time (utime + stime of
// --coordinator-pid) is taken around the streaming phase only; its peak RSS
// (VmHWM) at the end.
//
//   shard-scale-bench --coordinator HOST:PORT --job ID --ranks R
//                     --coordinator-pid PID [--ranks-per-connection 10]
//   shard-scale-bench --memcpy-bytes B     (the copy rate of B bytes)
#include <algorithm>
#include <cstring>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/barrier.h"
#include "common/cli/command_line.h"
#include "shard/client/coordinator_client.h"
#include "tests/bench/bench_report.h"
#include "tests/bench/coordinator_load.h"

namespace shard::bench {
namespace {

double PeakRssMibOf(int pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024;
  }
  return 0;
}

int Scale(const std::string& address, const std::string& job, uint32_t ranks,
          int pid, uint32_t per_connection) {
  std::vector<std::shared_ptr<client::CoordinatorClient>> clients;
  for (uint32_t i = 0; i < ranks; i += per_connection) {
    client::ClientOptions options;
    options.address = address;
    options.rpc_timeout = absl::Minutes(5);
    auto client = client::CoordinatorClient::Connect(options);
    if (!client.ok()) return Fail(client.status().ToString());
    clients.push_back(*std::move(client));
  }
  std::vector<double> drains(ranks, 0);
  std::vector<uint64_t> counts(ranks, 0);
  std::vector<std::string> errors(ranks);
  absl::Barrier* joined = new absl::Barrier(static_cast<int>(ranks) + 1);
  absl::Barrier* go = new absl::Barrier(static_cast<int>(ranks) + 1);
  std::vector<std::thread> threads;
  for (uint32_t i = 0; i < ranks; ++i) {
    threads.emplace_back([&, i] {
      auto& client = clients[i / per_connection];
      absl::StatusOr<client::Membership> m = client->Join(
          job, absl::StrCat("rank-", i), std::nullopt, absl::Minutes(5));
      if (joined->Block()) delete joined;
      if (go->Block()) delete go;
      if (!m.ok()) {
        errors[i] = m.status().ToString();
        return;
      }
      std::vector<uint64_t> batch(4096);
      const Clock::time_point start = Clock::now();
      auto stream = client->OpenStream(*m, 0, 0);
      while (true) {
        absl::StatusOr<size_t> got = stream->Next(absl::MakeSpan(batch));
        if (!got.ok()) {
          errors[i] = got.status().ToString();
          return;
        }
        if (*got == 0) break;
        counts[i] += *got;
      }
      drains[i] = Seconds(start, Clock::now());
    });
  }
  joined->Block();
  // The epoch order is computed once, before the clock starts (its cost is
  // what shard-sampler-bench's cold runs measure).
  const Clock::time_point warm_start = Clock::now();
  absl::StatusOr<shard::v1::PreviewShardResponse> warm =
      clients[0]->Preview(job, 0, 0, 0, 1);
  if (!warm.ok()) return Fail(warm.status().ToString());
  const double order_s = Seconds(warm_start, Clock::now());
  std::fprintf(stderr, "scale bench: %u ranks joined; streaming\n", ranks);
  const double cpu_before = ProcCpuSeconds(pid);
  const Clock::time_point start = Clock::now();
  go->Block();
  for (std::thread& t : threads) t.join();
  const double wall = Seconds(start, Clock::now());
  const double cpu = ProcCpuSeconds(pid) - cpu_before;
  for (const std::string& error : errors) {
    if (!error.empty()) return Fail(error);
  }
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  std::vector<double> sorted = drains;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[sorted.size() / 2];
  std::printf(
      "{\"ranks\":%u,\"indices\":%llu,\"wall_s\":%.3f,"
      "\"aggregate_indices_per_s\":%.0f,\"coordinator_cpu_s\":%.3f,"
      "\"coordinator_cpu_s_per_1e9\":%.2f,\"coordinator_peak_rss_mib\":%.1f,"
      "\"rank_drain_median_s\":%.3f,\"rank_drain_max_s\":%.3f,"
      "\"slowest_over_median\":%.3f,\"client_peak_rss_mib\":%.1f,"
      "\"order_s\":%.3f}\n",
      ranks, static_cast<unsigned long long>(total), wall, total / wall, cpu,
      cpu * 1e9 / static_cast<double>(total), PeakRssMibOf(pid), median,
      sorted.back(), sorted.back() / median, PeakRssMib(), order_s);
  return 0;
}

int Memcpy(uint64_t bytes) {
  std::vector<char> from(bytes, 1), to(bytes, 0);
  std::vector<double> times;
  for (int run = 0; run < 5; ++run) {
    const Clock::time_point start = Clock::now();
    std::memcpy(to.data(), from.data(), bytes);
    times.push_back(Seconds(start, Clock::now()));
    from[run] = to[bytes - 1 - run];  // Keep the copies observable.
  }
  std::sort(times.begin(), times.end());
  std::printf(
      "{\"memcpy_bytes\":%llu,\"memcpy_s\":%.6f,\"bytes_per_s\":%.0f}\n",
      static_cast<unsigned long long>(bytes), times[2], bytes / times[2]);
  return 0;
}

}  // namespace
}  // namespace shard::bench

int main(int argc, char** argv) {
  CLI::App app("Streams every rank of a large job at once.");
  shard::cli::Configure(app, "shard-scale-bench");
  std::string address, job;
  uint32_t ranks = 1000, per_connection = 10;
  int pid = 0;
  uint64_t memcpy_bytes = 0;
  shard::cli::AddOption(app, "--coordinator", address, "HOST:PORT");
  shard::cli::AddOption(app, "--job", job, "job id");
  shard::cli::AddOption(app, "--ranks", ranks, "ranks")
      ->check(shard::cli::AtLeast(1));
  shard::cli::AddOption(app, "--coordinator-pid", pid, "the coordinator's pid");
  shard::cli::AddOption(app, "--ranks-per-connection", per_connection,
                        "ranks sharing one channel")
      ->check(shard::cli::AtLeast(1));
  shard::cli::AddOption(app, "--memcpy-bytes", memcpy_bytes,
                        "measure memcpy of this many bytes instead");
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  if (memcpy_bytes > 0) return shard::bench::Memcpy(memcpy_bytes);
  if (address.empty() || job.empty() || pid <= 0) {
    return shard::bench::Fail(
        "--coordinator, --job and --coordinator-pid "
        "are required");
  }
  return shard::bench::Scale(address, job, ranks, pid, per_connection);
}
