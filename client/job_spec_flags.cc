#include "client/job_spec_flags.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/cli/command_line.h"
#include "common/plan/spec/job_spec.h"

namespace shard::client {
namespace {

shard::v1::TailPolicy TailOf(const std::string& text) {
  if (text == "drop") return shard::v1::TAIL_POLICY_DROP;
  if (text == "uneven") return shard::v1::TAIL_POLICY_UNEVEN;
  return shard::v1::TAIL_POLICY_PAD;
}

shard::v1::ShuffleAlgorithm AlgorithmOf(const std::string& text) {
  if (text == "feistel") return shard::v1::SHUFFLE_ALGORITHM_FEISTEL;
  if (text == "block") return shard::v1::SHUFFLE_ALGORITHM_BLOCK;
  return shard::v1::SHUFFLE_ALGORITHM_TORCH;
}

}  // namespace

bool JobSpecFlags::AnyGiven() const {
  return std::any_of(options.begin(), options.end(),
                     [](const CLI::Option* option) { return option->count(); });
}

void AddJobSpecOptions(CLI::App& app, JobSpecFlags* flags) {
  const std::string group = "Job spec";
  flags->options = {
      cli::AddOption(app, "--seed", flags->seed, "shuffle seed")->group(group),
      cli::AddOption(app, "--shuffle", flags->shuffle,
                     "shuffle each epoch (true|false)")
          ->default_str("true")
          ->group(group),
      cli::AddOption(app, "--tail", flags->tail,
                     "the last incomplete round: pad (repeat from the start), "
                     "drop, or uneven (evaluation: each sample once)")
          ->check(CLI::IsMember({"pad", "drop", "uneven"}))
          ->group(group),
      cli::AddOption(app, "--torch-randperm", flags->torch_randperm,
                     "which torch.randperm the torch shuffle reproduces: "
                     "legacy (torch < 2.6) or 2.6")
          ->check(CLI::IsMember({"legacy", "2.6"}))
          ->group(group),
      cli::AddOption(app, "--shuffle-algorithm", flags->shuffle_algorithm,
                     "torch (DistributedSampler's order), feistel (keyed, "
                     "no materialised order) or block (record locality)")
          ->check(CLI::IsMember({"torch", "feistel", "block"}))
          ->group(group),
      cli::AddOption(app, "--block-size", flags->block_size,
                     "samples per block (--shuffle-algorithm block)")
          ->group(group),
      cli::AddOption(app, "--window-blocks", flags->window_blocks,
                     "blocks shuffled together (--shuffle-algorithm block)")
          ->group(group),
      cli::AddOption(app, "--min-world-size", flags->min_world_size,
                     "elastic: fewest members a generation may start with "
                     "(0: the world size)",
                     plan::kMaxWorldSize)
          ->group(group),
      cli::AddOption(app, "--max-world-size", flags->max_world_size,
                     "elastic: most members a generation may take (0: the "
                     "world size)",
                     plan::kMaxWorldSize)
          ->group(group),
  };
}

absl::StatusOr<shard::v1::JobSpec> JobSpecFromFlags(const JobSpecFlags& flags,
                                                    uint64_t dataset_size,
                                                    uint64_t world_size) {
  if (world_size > plan::kMaxWorldSize) {
    return absl::InvalidArgumentError(absl::StrCat("--world-size ", world_size,
                                                   " is above the largest, ",
                                                   plan::kMaxWorldSize));
  }
  shard::v1::JobSpec spec;
  spec.set_dataset_size(dataset_size);
  spec.set_world_size(static_cast<uint32_t>(world_size));
  spec.set_min_world_size(flags.min_world_size);
  spec.set_max_world_size(flags.max_world_size);
  spec.set_shuffle_algorithm(AlgorithmOf(flags.shuffle_algorithm));
  spec.set_block_size(flags.block_size);
  spec.set_window_blocks(flags.window_blocks);
  spec.set_seed(flags.seed);
  spec.set_shuffle(flags.shuffle);
  spec.set_tail(TailOf(flags.tail));
  spec.set_torch_randperm(flags.torch_randperm == "legacy"
                              ? shard::v1::TORCH_RANDPERM_LEGACY
                              : shard::v1::TORCH_RANDPERM_2_6);
  return spec;
}

namespace {

// Sets the share of `source` from "weight=W", "repeat=R" or "choose=C",
// each number decimal (cli::ParseDecimal, cli::ParseDecimalFraction).
absl::Status ParseSourceShare(absl::string_view text,
                              shard::v1::Source* source) {
  const std::pair<absl::string_view, absl::string_view> kv =
      absl::StrSplit(text, absl::MaxSplits('=', 1));
  const auto refused = [&](const absl::Status& why) {
    return absl::InvalidArgumentError(
        absl::StrCat("source \"", source->name(), "\": ", kv.first, "=",
                     why.message(), "; give weight=W, repeat=R or choose=C"));
  };
  if (kv.first == "weight" || kv.first == "repeat") {
    const absl::StatusOr<double> fraction =
        cli::ParseDecimalFraction(kv.second);
    if (!fraction.ok()) return refused(fraction.status());
    kv.first == "weight" ? source->set_weight(*fraction)
                         : source->set_repeat(*fraction);
  } else if (kv.first == "choose") {
    const absl::StatusOr<uint64_t> count =
        cli::ParseDecimal(kv.second, UINT64_MAX);
    if (!count.ok()) return refused(count.status());
    source->set_choose(*count);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "source \"", source->name(),
        "\": give weight=W, repeat=R or choose=C, got \"", text, "\""));
  }
  return absl::OkStatus();
}

// True when `part` (the text after an option's last ':') is a share:
// "weight=...", "repeat=..." or "choose=...", whatever follows the '='.
bool NamesAShare(absl::string_view part) {
  return absl::StartsWith(part, "weight=") ||
         absl::StartsWith(part, "repeat=") || absl::StartsWith(part, "choose=");
}

}  // namespace

absl::StatusOr<SourceOption> ParseSourceOption(absl::string_view text,
                                               absl::string_view syntax) {
  const size_t name_end = text.find(':');
  // The share is the last part when it names one (a path may hold ':' and
  // '=').
  size_t value_end = text.rfind(':');
  if (value_end == name_end || !NamesAShare(text.substr(value_end + 1))) {
    value_end = text.size();
  }
  if (name_end == absl::string_view::npos || name_end == 0 ||
      value_end == name_end + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--source takes ", syntax, ", got \"", text, "\""));
  }
  SourceOption option;
  option.source.set_name(std::string(text.substr(0, name_end)));
  option.value =
      std::string(text.substr(name_end + 1, value_end - name_end - 1));
  if (value_end < text.size()) {
    if (absl::Status s =
            ParseSourceShare(text.substr(value_end + 1), &option.source);
        !s.ok()) {
      return s;
    }
  }
  return option;
}

absl::StatusOr<shard::v1::Source> ParseSizedSource(absl::string_view text) {
  constexpr absl::string_view kSyntax =
      "NAME:SIZE[:weight=W|repeat=R|choose=C]";
  absl::StatusOr<SourceOption> option = ParseSourceOption(text, kSyntax);
  if (!option.ok()) return option.status();
  const absl::StatusOr<uint64_t> size =
      cli::ParseDecimal(option->value, UINT64_MAX);
  if (!size.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--source takes ", kSyntax, ", got \"", text, "\": SIZE ",
                     size.status().message()));
  }
  option->source.set_size(*size);
  return std::move(option->source);
}

}  // namespace shard::client
