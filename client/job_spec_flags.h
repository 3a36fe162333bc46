// The job-spec options `shardctl create-job` and `shard-train` share:
//   --seed S  --shuffle true|false  --tail pad|drop|uneven
//   --torch-randperm legacy|2.6  --shuffle-algorithm torch|feistel|block
//   --block-size B  --window-blocks K  --min-world-size N  --max-world-size N
// Defaults are the coordinator's (seed 0, shuffle, pad, 2.6, torch). The
// dataset size and world size come from each program's own options.
#ifndef CLIENT_JOB_SPEC_FLAGS_H_
#define CLIENT_JOB_SPEC_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shard/v1/shard.pb.h"

namespace shard::client {

// The values of the options above, as given (or their defaults).
struct JobSpecFlags {
  uint64_t seed = 0;
  bool shuffle = true;
  std::string tail = "pad";
  std::string torch_randperm = "2.6";
  std::string shuffle_algorithm = "torch";
  uint64_t block_size = 0;
  uint32_t window_blocks = 0;
  uint32_t min_world_size = 0;
  uint32_t max_world_size = 0;

  // The options added to the app (to tell whether any was given).
  std::vector<const CLI::Option*> options;

  // True when any of the options was given on the command line.
  bool AnyGiven() const;
};

// Adds the options above to `app`, bound to *flags (owned by the caller).
void AddJobSpecOptions(CLI::App& app, JobSpecFlags* flags);

// The spec the options describe, with `dataset_size` and `world_size`.
// INVALID_ARGUMENT when the world size does not fit in 32 bits (the
// coordinator checks the rest, e.g. block options without the block
// shuffle).
absl::StatusOr<shard::v1::JobSpec> JobSpecFromFlags(const JobSpecFlags& flags,
                                                    uint64_t dataset_size,
                                                    uint64_t world_size);

// A --source option "NAME:VALUE[:weight=W|repeat=R|choose=C]" split into
// the source's name and share (no share: repeat=1) and VALUE, the text in
// between (shardctl: the size; shard-train: a path, which may hold ':').
// INVALID_ARGUMENT naming `syntax` when a part is missing or the share is
// not one of the three; the coordinator checks the values.
struct SourceOption {
  shard::v1::Source source;
  std::string value;
};
absl::StatusOr<SourceOption> ParseSourceOption(absl::string_view text,
                                               absl::string_view syntax);

// One source of a mixture from "NAME:SIZE[:weight=W|repeat=R|choose=C]"
// (shardctl create-job --source).
absl::StatusOr<shard::v1::Source> ParseSizedSource(absl::string_view text);

}  // namespace shard::client

#endif  // CLIENT_JOB_SPEC_FLAGS_H_
