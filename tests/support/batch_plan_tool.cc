// Prints an epoch's balanced batches as the coordinator's planning code
// (common/plan/batches/epoch_batches.h) makes them, over the identity order
// (the sample at position p is p mod N), so that the conformance test can
// compare them with the Python reference
// (tests/conformance/batch_plan_reference.py) and the balanced-batches
// benchmark can measure them.
//
//   shard-batch-plan --costs FILE (--batch-size B | --batch-tokens T)
//                    --world W [--cost-model padded|sum] [--window S]
//                    [--seed S] [--epoch E] [--tail pad|drop]
//                    [--attention-length D] [--resize BASE:W ...]
//                    [--balance]
//
// FILE holds one little-endian u32 cost per sample. Prints one line per
// step, in training order: the step's micro-batches, rank 0 first, as a
// JSON list of lists of sample indices. With --resize (in order, bases
// increasing), a world of W ranks serves the rest of the epoch from each
// BASE (common/plan/batches/epoch_worlds.h), and only the last world's steps
// are printed. With --balance it prints instead the epoch's figures
// (plan::BalanceFigures, what shardctl plan --balance prints) as one JSON
// object: steps, samples, p50, p99, max, padding, fill. Exit 0, 1 on an
// unreadable file, 2 on a usage error.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "common/cli/command_line.h"
#include "common/plan/batches/balance_figures.h"
#include "common/plan/batches/epoch_batches.h"
#include "common/plan/batches/epoch_worlds.h"

namespace shard::testing {
namespace {

struct Options {
  std::string costs_file;
  uint64_t batch_size = 0;
  uint64_t batch_tokens = 0;
  std::string cost_model = "padded";
  uint64_t window = 0;
  uint64_t attention_length = 0;
  uint32_t world = 1;
  uint64_t seed = 0;
  bool balance = false;
  uint64_t epoch = 0;
  std::string tail = "pad";
  std::vector<std::string> resizes;  // BASE:W
};

// The epoch's worlds: the first from 0, then one per BASE:W; nullopt on a
// malformed value.
std::optional<std::vector<plan::EpochLink>> WorldsOf(const Options& options) {
  std::vector<plan::EpochLink> worlds = {plan::EpochLink{0, options.world}};
  for (const std::string& resize : options.resizes) {
    unsigned long long base = 0;
    unsigned world = 0;
    char extra = 0;
    if (std::sscanf(resize.c_str(), "%llu:%u%c", &base, &world, &extra) != 2 ||
        world == 0 || base <= worlds.back().base) {
      return std::nullopt;
    }
    worlds.push_back(plan::EpochLink{base, world});
  }
  return worlds;
}

bool ReadCosts(const std::string& path, std::vector<uint32_t>& costs) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) return false;
  costs.resize(bytes.size() / 4);
  for (size_t i = 0; i < costs.size(); ++i) {
    const auto* b = reinterpret_cast<const unsigned char*>(&bytes[4 * i]);
    costs[i] = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t{b[3]} << 24);
  }
  return !costs.empty() && bytes.size() % 4 == 0;
}

void PrintStep(const plan::WindowBatches& batches, uint64_t step,
               uint64_t order_size) {
  std::string line = "[";
  for (uint32_t rank = 0; rank < batches.world_size(); ++rank) {
    line += rank == 0 ? "[" : ",[";
    for (uint64_t i = batches.BatchBegin(step, rank);
         i < batches.BatchEnd(step, rank); ++i) {
      if (i != batches.BatchBegin(step, rank)) line += ',';
      line += std::to_string(batches.positions()[i] % order_size);
    }
    line += ']';
  }
  line += "]\n";
  std::fputs(line.c_str(), stdout);
}

int Run(const Options& options) {
  std::vector<uint32_t> costs;
  if (!ReadCosts(options.costs_file, costs)) {
    std::fprintf(stderr, "cannot read u32 costs from %s\n",
                 options.costs_file.c_str());
    return 1;
  }
  plan::BatchPolicy policy;
  policy.batch_size = options.batch_size;
  policy.batch_tokens = options.batch_tokens;
  policy.cost_model = options.cost_model == "sum"
                          ? plan::BatchCostModel::kSum
                          : plan::BatchCostModel::kPadded;
  policy.window = options.window;
  policy.attention_length = options.attention_length;
  // As a client that uploads the costs gives them (JobSpec.costs_total).
  for (uint32_t cost : costs) policy.costs_total += cost;
  policy.costs_count = costs.size();
  const std::optional<std::vector<plan::EpochLink>> worlds = WorldsOf(options);
  if (!worlds.has_value()) {
    std::fprintf(stderr, "--resize takes BASE:W, W >= 1, bases increasing\n");
    return 2;
  }
  const plan::EpochWorlds epoch_worlds(
      costs.size(),
      options.tail == "drop" ? plan::Tail::kDrop : plan::Tail::kPad, policy,
      *worlds);
  const auto cost_of = [&](absl::Span<const uint64_t> positions,
                           absl::Span<uint32_t> out) {
    for (uint64_t i = 0; i < out.size(); ++i) {
      out[i] = costs[positions[i] % costs.size()];
    }
  };
  const plan::EpochBatches epoch =
      epoch_worlds.Resolve(cost_of, options.seed, options.epoch);
  plan::BalanceFigures figures;
  for (uint64_t window = 0; window < epoch.windows(); ++window) {
    const plan::WindowBatches batches =
        epoch.Arrange(window, cost_of, options.seed, options.epoch);
    if (options.balance) {
      figures.AddWindow(batches);
      continue;
    }
    for (uint64_t step = 0; step < batches.steps(); ++step) {
      PrintStep(batches, step, costs.size());
    }
  }
  if (options.balance) {
    std::printf(
        "{\"steps\": %llu, \"samples\": %llu, \"p50\": %.17g, \"p99\": "
        "%.17g, \"max\": %.17g, \"padding\": %.17g, \"fill\": %.17g}\n",
        static_cast<unsigned long long>(figures.steps()),
        static_cast<unsigned long long>(figures.samples()),
        figures.Imbalance(0.5), figures.Imbalance(0.99),
        figures.max_imbalance(), figures.padding(), figures.fill());
  }
  return 0;
}

}  // namespace
}  // namespace shard::testing

int main(int argc, char** argv) {
  shard::testing::Options options;
  CLI::App app{"Prints an epoch's balanced batches over the identity order."};
  shard::cli::Configure(app, "shard-batch-plan");
  shard::cli::AddOption(app, "--costs", options.costs_file,
                        "file of little-endian u32 costs")
      ->required();
  auto* size = shard::cli::AddOption(app, "--batch-size", options.batch_size)
                   ->check(shard::cli::AtLeast(1));
  auto* tokens =
      shard::cli::AddOption(app, "--batch-tokens", options.batch_tokens)
          ->check(shard::cli::AtLeast(1));
  size->excludes(tokens);
  shard::cli::AddOption(app, "--world", options.world)
      ->required()
      ->check(shard::cli::AtLeast(1));
  shard::cli::AddOption(app, "--cost-model", options.cost_model)
      ->check(CLI::IsMember({"padded", "sum"}));
  shard::cli::AddOption(app, "--window", options.window);
  shard::cli::AddOption(app, "--attention-length", options.attention_length,
                        "balance steps by L + L^2 / D (sum, --batch-tokens)");
  shard::cli::AddOption(app, "--seed", options.seed);
  shard::cli::AddOption(app, "--epoch", options.epoch);
  shard::cli::AddOption(app, "--tail", options.tail)
      ->check(CLI::IsMember({"pad", "drop"}));
  shard::cli::AddOption(app, "--resize", options.resizes,
                        "BASE:W: W ranks serve the rest from BASE (repeat)");
  app.add_flag("--balance", options.balance,
               "print the epoch's balance figures instead of its steps");
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  if (options.batch_size == 0 && options.batch_tokens == 0) {
    std::fprintf(stderr, "give --batch-size or --batch-tokens\n");
    return shard::cli::kExitUsage;
  }
  return shard::testing::Run(options);
}
