// Locality of one rank's reads from a record file set: rank R of W reads
// its epoch-0 records, in the order its shard gives them, under each
// shuffle (torch, several block/window sizes, none), with the files' pages
// dropped from the page cache before each run. Prints one JSON line per
// order: read time and the bytes the process read from disk
// (/proc/self/io read_bytes).
//
//   shard-record-locality-bench --path DIR [--world-size 8] [--rank 0]
//       [--blocks 64:16,256:16,1024:16,1024:64] [--seed 0]
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/cli/command_line.h"
#include "common/plan/layouts/rank_indices.h"
#include "common/plan/spec/job_spec.h"
#include "tests/bench/bench_report.h"
#include "trainer/data/record_file.h"

namespace shard::bench {
namespace {

// Bytes this process has caused to be fetched from storage.
uint64_t ReadBytesFromDisk() {
  std::ifstream io("/proc/self/io");
  std::string key;
  uint64_t value = 0;
  while (io >> key >> value) {
    if (key == "read_bytes:") return value;
  }
  return 0;
}

// Drops the set's pages from the page cache (they are clean: the files
// were written and synced before).
bool DropFromCache(const trainer::data::RecordSet& set) {
  for (const auto& file : set.files()) {
    const int fd = ::open(file.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ::fdatasync(fd);
    const int rc = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
    if (rc != 0) return false;
  }
  return true;
}

struct Order {
  std::string name;
  shard::v1::JobSpec spec;
};

int Run(int argc, char** argv) {
  CLI::App app("Reads one rank's epoch in several orders and times it.");
  shard::cli::Configure(app, "shard-record-locality-bench");
  std::string path, blocks = "64:16,256:16,1024:16,1024:64";
  uint64_t world = 8, rank = 0, seed = 0;
  shard::cli::AddOption(app, "--path", path, "record file or directory")
      ->required();
  shard::cli::AddOption(app, "--world-size", world, "ranks");
  shard::cli::AddOption(app, "--rank", rank, "the rank read");
  shard::cli::AddOption(app, "--blocks", blocks,
                        "BLOCK:WINDOW,... block orders");
  shard::cli::AddOption(app, "--seed", seed, "shuffle seed");
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  auto set = trainer::data::RecordSet::Open(path);
  if (!set.ok()) {
    std::fprintf(stderr, "%s\n", set.status().ToString().c_str());
    return 1;
  }
  if (world == 0 || rank >= world) {
    std::fprintf(stderr, "--rank must be below --world-size\n");
    return 2;
  }

  shard::v1::JobSpec base;
  base.set_dataset_size(set->size());
  base.set_world_size(static_cast<uint32_t>(world));
  base.set_seed(seed);
  std::vector<Order> orders;
  orders.push_back({"torch", base});
  for (absl::string_view pair : absl::StrSplit(blocks, ',')) {
    std::vector<std::string> parts = absl::StrSplit(pair, ':');
    uint64_t block = 0, window = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &block) ||
        !absl::SimpleAtoi(parts[1], &window)) {
      std::fprintf(stderr, "--blocks takes BLOCK:WINDOW,...\n");
      return 2;
    }
    Order order{"block " + parts[0] + " x window " + parts[1], base};
    order.spec.set_shuffle_algorithm(shard::v1::SHUFFLE_ALGORITHM_BLOCK);
    order.spec.set_block_size(block);
    order.spec.set_window_blocks(static_cast<uint32_t>(window));
    orders.push_back(order);
  }
  Order none{"no shuffle", base};
  none.spec.set_shuffle(false);
  orders.push_back(none);

  std::vector<uint8_t> record(set->record_size());
  for (const Order& order : orders) {
    absl::StatusOr<shard::v1::JobSpec> spec =
        plan::NormalizeJobSpec(order.spec, ~uint64_t{0});
    if (!spec.ok()) {
      std::fprintf(stderr, "%s: %s\n", order.name.c_str(),
                   spec.status().ToString().c_str());
      return 2;
    }
    const plan::ShardLayout layout = plan::LayoutOf(*spec);
    const plan::EpochOrder epoch_order = plan::BuildEpochOrder(*spec, 0);
    std::vector<uint64_t> indices(layout.RankShardSize(rank));
    plan::CopyRankIndices(epoch_order, layout, rank, 0,
                          absl::MakeSpan(indices));
    if (!DropFromCache(*set)) {
      std::fprintf(stderr, "posix_fadvise(DONTNEED) failed on %s\n",
                   path.c_str());
      return 1;
    }
    const uint64_t disk_before = ReadBytesFromDisk();
    const Clock::time_point began = Clock::now();
    for (uint64_t index : indices) {
      if (absl::Status s = set->Read(index, absl::MakeSpan(record)); !s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        return 1;
      }
    }
    const double seconds = Seconds(began, Clock::now());
    const uint64_t disk = ReadBytesFromDisk() - disk_before;
    std::printf(
        "{\"order\":\"%s\",\"records\":%zu,\"record_bytes\":%u,"
        "\"seconds\":%.3f,\"disk_bytes\":%llu}\n",
        order.name.c_str(), indices.size(), set->record_size(), seconds,
        static_cast<unsigned long long>(disk));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace shard::bench

int main(int argc, char** argv) { return shard::bench::Run(argc, argv); }
