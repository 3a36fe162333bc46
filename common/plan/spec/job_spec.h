// Validation and normalisation of job specs and ids, and the bridge from a
// spec to the planner's types. Pure functions over protos; thread-safe.
#ifndef COMMON_PLAN_SPEC_JOB_SPEC_H_
#define COMMON_PLAN_SPEC_JOB_SPEC_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/plan/batches/batch_policy.h"
#include "common/plan/batches/epoch_batches.h"
#include "common/plan/batches/epoch_worlds.h"
#include "common/plan/layouts/shard_layout.h"
#include "common/plan/mixtures/mixture.h"
#include "common/plan/orders/epoch_order.h"
#include "shard/v1/shard.pb.h"

namespace shard::plan {

// 2^20 ranks: ten times the largest training clusters (100,000-200,000
// GPUs, one rank each), while one generation's member list (about 26 bytes
// a member) stays a record of tens of MiB at most.
inline constexpr uint32_t kMaxWorldSize = 1u << 20;
// Epochs are 0 .. 2^31 - 1.
inline constexpr uint64_t kMaxEpoch = (uint64_t{1} << 31) - 1;
inline constexpr uint64_t kMaxSeed = (uint64_t{1} << 63) - 1;

// Balanced batches (JobSpec.batches): bounds of the policy's fields, and at
// most 2^32 samples with costs (u32 per sample on the wire; 2 or 4 bytes a
// sample resident).
inline constexpr uint64_t kMaxBatchSize = 65536;
inline constexpr uint64_t kMaxBatchTokens = uint64_t{1} << 40;
inline constexpr uint64_t kMaxBatchWindow = uint64_t{1} << 24;
inline constexpr uint64_t kMaxCostedSamples = uint64_t{1} << 32;
inline constexpr uint64_t kMaxAttentionLength = uint64_t{1} << 32;

// Checks a job id: 1..128 characters of [A-Za-z0-9._-]. INVALID_ARGUMENT
// otherwise.
absl::Status ValidateJobId(absl::string_view job_id);

// Checks a member id: 1..256 printable ASCII characters, no spaces.
absl::Status ValidateMemberId(absl::string_view member_id);

// Checks an epoch number against 0..kMaxEpoch.
absl::Status ValidateEpoch(uint64_t epoch);

// Returns the spec with every defaulted field filled in (shuffle true, tail
// pad, algorithm torch, torch_randperm 2.6, min/max world size = world
// size; a mixture's dataset_size and epoch_size), or INVALID_ARGUMENT saying
// which
// field is wrong. `max_order_bytes` bounds the memory one shuffled epoch order
// may take (FAILED_PRECONDITION above it).
absl::StatusOr<shard::v1::JobSpec> NormalizeJobSpec(
    const shard::v1::JobSpec& spec, uint64_t max_order_bytes);

// "pad" (also for UNSPECIFIED), "drop" or "uneven".
absl::string_view TailName(shard::v1::TailPolicy tail);

// A balanced-batch policy in one line ("batch_tokens=4096 cost=padded",
// with " window=S" when set); "" for a spec without balanced batches.
std::string DescribeBatchPolicy(const shard::v1::JobSpec& spec);

// Human-readable one-line form, e.g. "N=10 W=2 seed=0 shuffle=true tail=pad".
std::string DescribeJobSpec(const shard::v1::JobSpec& spec);

// What differs between two normalised specs, field by field ("modified:
// shuffle_algorithm: SHUFFLE_ALGORITHM_TORCH -> SHUFFLE_ALGORITHM_FEISTEL",
// first `from`'s value then `to`'s; at most 8 differences, then how many
// more), or "" when they describe the same job. A source without a share
// and one with repeat 1 are the same share (docs/mixtures.md).
std::string JobSpecDifference(const shard::v1::JobSpec& from,
                              const shard::v1::JobSpec& to);

// The layout of a normalised spec at its initial world size from position
// 0: DistributedSampler's plan (a batched layout for balanced batches).
ShardLayout LayoutOf(const shard::v1::JobSpec& spec);
// The layout of the last of an epoch's worlds, in order: for
// `worlds.back()`'s size from its base (elastic re-sharding). Plain jobs
// read only `worlds.back()`; balanced batches need every world of the
// epoch, the first from position 0 (epoch_worlds.h).
ShardLayout LayoutOf(const shard::v1::JobSpec& spec,
                     const std::vector<EpochLink>& worlds);

// The balanced-batch policy of a normalised spec with batches, its
// epoch's windows for `world_size` ranks, and the parts of an epoch its
// worlds serve.
BatchPolicy BatchPolicyOf(const shard::v1::JobSpec& spec);
EpochBatches EpochBatchesOf(const shard::v1::JobSpec& spec,
                            uint32_t world_size);
EpochWorlds EpochWorldsOf(const shard::v1::JobSpec& spec,
                          std::vector<EpochLink> worlds);

// Bytes the epoch order of a normalised spec holds in memory.
uint64_t EpochOrderBytes(const shard::v1::JobSpec& spec);

// Computes the epoch order of a normalised spec (O(N) for shuffled specs);
// one built while `cancelled` turned true is unfinished and must be
// discarded.
EpochOrder BuildEpochOrder(const shard::v1::JobSpec& spec, uint64_t epoch,
                           const std::atomic<bool>* cancelled = nullptr);
// The same order, but a torch shuffle is returned pending (allocated, not
// shuffled; throws std::bad_alloc): the caller runs EpochOrder::Shuffle,
// and may hand the order to readers first.
EpochOrder StartEpochOrder(const shard::v1::JobSpec& spec, uint64_t epoch);

}  // namespace shard::plan

#endif  // COMMON_PLAN_SPEC_JOB_SPEC_H_
