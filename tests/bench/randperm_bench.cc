// The epoch-order permutation alone, side by side in one run: the
// prefetching torch.randperm port (common/plan/torch_randperm), the
// one-swap-at-a-time port it replaced (tests/support/reference_randperm.h),
// and a memcpy of the same number of bytes (the memory-bandwidth limit).
// Prints one JSON line per size: seconds of each (median of --repeats),
// whether both ports gave the same permutation, and a checksum of it
// (sum of (i + 1) * p[i] mod 2^64).
//
//   shard-randperm-bench [--sizes 10000000,100000000] [--repeats 3]
//       [--variant legacy|2.6] [--seed 0]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/cli/command_line.h"
#include "common/plan/shuffles/torch_randperm.h"
#include "tests/bench/bench_report.h"
#include "tests/support/reference_randperm.h"

namespace shard::bench {
namespace {

template <typename F>
double MedianSeconds(int repeats, F&& run) {
  std::vector<double> seconds;
  for (int i = 0; i < repeats; ++i) {
    const Clock::time_point began = Clock::now();
    run();
    seconds.push_back(Seconds(began, Clock::now()));
  }
  std::sort(seconds.begin(), seconds.end());
  return seconds[seconds.size() / 2];
}

int Run(int argc, char** argv) {
  CLI::App app("Times the torch.randperm reproduction against its reference.");
  shard::cli::Configure(app, "shard-randperm-bench");
  std::string sizes = "10000000,100000000", variant_name = "2.6";
  int repeats = 3;
  uint64_t seed = 0;
  shard::cli::AddOption(app, "--sizes", sizes, "N,... permutation sizes");
  shard::cli::AddOption(app, "--repeats", repeats,
                        "runs per size (the median counts)")
      ->check(shard::cli::AtLeast(1));
  shard::cli::AddOption(app, "--variant", variant_name, "legacy or 2.6")
      ->check(CLI::IsMember({"legacy", "2.6"}));
  shard::cli::AddOption(app, "--seed", seed, "seed");
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  const bool torch26 = variant_name == "2.6";
  const plan::RandpermVariant variant = torch26
                                            ? plan::RandpermVariant::kTorch26
                                            : plan::RandpermVariant::kLegacy;
  for (absl::string_view text : absl::StrSplit(sizes, ',')) {
    uint64_t n = 0;
    if (!absl::SimpleAtoi(text, &n) || n == 0 || n > UINT32_MAX) {
      std::fprintf(stderr, "--sizes: 1 .. 2^32-1, got %s\n",
                   std::string(text).c_str());
      return 2;
    }
    std::vector<uint32_t> fast(n), reference(n), copy(n);
    const double fast_s = MedianSeconds(repeats, [&] {
      plan::TorchRandperm<uint32_t>(seed, variant, absl::MakeSpan(fast));
    });
    const double reference_s = MedianSeconds(repeats, [&] {
      testing::ReferenceRandperm(seed, torch26, plan::kRandpermLargeThreshold,
                                 absl::MakeSpan(reference));
    });
    const double memcpy_s = MedianSeconds(repeats, [&] {
      std::memcpy(copy.data(), fast.data(), n * sizeof(uint32_t));
    });
    // sum of (i + 1) * p[i] mod 2^64, to compare with torch's own output.
    uint64_t checksum = 0;
    for (uint64_t i = 0; i < n; ++i) checksum += (i + 1) * fast[i];
    std::printf(
        "{\"n\":%llu,\"prefetching_s\":%.4f,\"reference_s\":%.4f,"
        "\"memcpy_s\":%.4f,\"equal\":%s,\"checksum\":%llu}\n",
        static_cast<unsigned long long>(n), fast_s, reference_s, memcpy_s,
        fast == reference ? "true" : "false",
        static_cast<unsigned long long>(checksum));
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace shard::bench

int main(int argc, char** argv) { return shard::bench::Run(argc, argv); }
