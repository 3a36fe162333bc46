#include "client/job_spec_flags.h"

#include "absl/strings/str_cat.h"

namespace shard::client {
namespace {

constexpr const char* kSpecFlags[] = {
    "seed",           "shuffle",           "tail",
    "torch-randperm", "shuffle-algorithm", "block-size",
    "window-blocks",  "min-world-size",    "max-world-size"};

absl::StatusOr<shard::v1::TailPolicy> ParseTail(const std::string& text) {
  if (text == "pad") return shard::v1::TAIL_POLICY_PAD;
  if (text == "drop") return shard::v1::TAIL_POLICY_DROP;
  if (text == "uneven") return shard::v1::TAIL_POLICY_UNEVEN;
  return absl::InvalidArgumentError(
      absl::StrCat("--tail must be pad, drop or uneven, got \"", text, "\""));
}

absl::StatusOr<shard::v1::TorchRandperm> ParseRandperm(
    const std::string& text) {
  if (text == "legacy") return shard::v1::TORCH_RANDPERM_LEGACY;
  if (text == "2.6") return shard::v1::TORCH_RANDPERM_2_6;
  return absl::InvalidArgumentError(absl::StrCat(
      "--torch-randperm must be legacy or 2.6, got \"", text, "\""));
}

absl::StatusOr<shard::v1::ShuffleAlgorithm> ParseAlgorithm(
    const std::string& text) {
  if (text == "torch") return shard::v1::SHUFFLE_ALGORITHM_TORCH;
  if (text == "feistel") return shard::v1::SHUFFLE_ALGORITHM_FEISTEL;
  if (text == "block") return shard::v1::SHUFFLE_ALGORITHM_BLOCK;
  return absl::InvalidArgumentError(absl::StrCat(
      "--shuffle-algorithm must be torch, feistel or block, got \"", text,
      "\""));
}

}  // namespace

void AddJobSpecFlagNames(std::set<std::string>& accepted) {
  accepted.insert(std::begin(kSpecFlags), std::end(kSpecFlags));
}

bool HasJobSpecFlags(const CliFlags& flags) {
  for (const char* name : kSpecFlags) {
    if (flags.Has(name)) return true;
  }
  return false;
}

absl::StatusOr<shard::v1::JobSpec> JobSpecFromFlags(const CliFlags& flags,
                                                    uint64_t dataset_size,
                                                    uint64_t world_size) {
  absl::StatusOr<uint64_t> seed = flags.Uint64("seed", 0);
  absl::StatusOr<uint64_t> min_world = flags.Uint64("min-world-size", 0);
  absl::StatusOr<uint64_t> max_world = flags.Uint64("max-world-size", 0);
  absl::StatusOr<shard::v1::ShuffleAlgorithm> algorithm =
      ParseAlgorithm(flags.String("shuffle-algorithm", "torch"));
  absl::StatusOr<uint64_t> block_size = flags.Uint64("block-size", 0);
  absl::StatusOr<uint64_t> window_blocks = flags.Uint64("window-blocks", 0);
  absl::StatusOr<bool> shuffle = flags.Bool("shuffle", true);
  absl::StatusOr<shard::v1::TailPolicy> tail =
      ParseTail(flags.String("tail", "pad"));
  absl::StatusOr<shard::v1::TorchRandperm> randperm =
      ParseRandperm(flags.String("torch-randperm", "2.6"));
  for (const absl::Status& s :
       {seed.status(), shuffle.status(), tail.status(), randperm.status(),
        min_world.status(), max_world.status(), algorithm.status(),
        block_size.status(), window_blocks.status()}) {
    if (!s.ok()) return s;
  }
  for (uint64_t value : {world_size, *min_world, *max_world, *window_blocks}) {
    if (value > UINT32_MAX) {
      return absl::InvalidArgumentError(
          absl::StrCat("--world-size, --min-world-size, --max-world-size and "
                       "--window-blocks must fit in 32 bits, got ",
                       value));
    }
  }
  shard::v1::JobSpec spec;
  spec.set_dataset_size(dataset_size);
  spec.set_world_size(static_cast<uint32_t>(world_size));
  spec.set_min_world_size(static_cast<uint32_t>(*min_world));
  spec.set_max_world_size(static_cast<uint32_t>(*max_world));
  spec.set_shuffle_algorithm(*algorithm);
  spec.set_block_size(*block_size);
  spec.set_window_blocks(static_cast<uint32_t>(*window_blocks));
  spec.set_seed(*seed);
  spec.set_shuffle(*shuffle);
  spec.set_tail(*tail);
  spec.set_torch_randperm(*randperm);
  return spec;
}

}  // namespace shard::client
