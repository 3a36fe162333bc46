#include "common/plan/spec/job_spec.h"

#include <numeric>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/plan/batches/cost_table.h"
#include "google/protobuf/util/message_differencer.h"

namespace shard::plan {
namespace {

using shard::v1::JobSpec;

bool IsJobIdChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
         c == '_' || c == '-';
}

}  // namespace

absl::string_view TailName(shard::v1::TailPolicy tail) {
  switch (tail) {
    case shard::v1::TAIL_POLICY_DROP:
      return "drop";
    case shard::v1::TAIL_POLICY_UNEVEN:
      return "uneven";
    default:
      return "pad";
  }
}

absl::Status ValidateJobId(absl::string_view job_id) {
  if (job_id.empty() || job_id.size() > 128) {
    return absl::InvalidArgumentError(
        absl::StrCat("job_id must be 1..128 characters, got ", job_id.size()));
  }
  for (char c : job_id) {
    if (!IsJobIdChar(c)) {
      return absl::InvalidArgumentError(
          absl::StrCat("job_id may contain only [A-Za-z0-9._-], got \"",
                       absl::CHexEscape(job_id), "\""));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateMemberId(absl::string_view member_id) {
  if (member_id.empty() || member_id.size() > 256) {
    return absl::InvalidArgumentError(absl::StrCat(
        "member_id must be 1..256 characters, got ", member_id.size()));
  }
  for (char c : member_id) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(absl::StrCat(
          "member_id must be printable ASCII without spaces, got \"",
          absl::CHexEscape(member_id), "\""));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateEpoch(uint64_t epoch) {
  if (epoch > kMaxEpoch) {
    return absl::InvalidArgumentError(
        absl::StrCat("epoch must be in 0..", kMaxEpoch, ", got ", epoch));
  }
  return absl::OkStatus();
}

namespace {

// The rules for the fields as given, before defaults are filled in.
absl::Status CheckGivenFields(const JobSpec& spec) {
  if (absl::Status s = CheckSources(spec); !s.ok()) return s;
  if (spec.sources_size() == 0 &&
      (spec.dataset_size() == 0 || spec.dataset_size() > kMaxDatasetSize)) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset_size must be in 1..", kMaxDatasetSize, ", got ",
                     spec.dataset_size()));
  }
  if (spec.world_size() == 0 || spec.world_size() > kMaxWorldSize) {
    return absl::InvalidArgumentError(absl::StrCat("world_size must be in 1..",
                                                   kMaxWorldSize, ", got ",
                                                   spec.world_size()));
  }
  if (spec.seed() > kMaxSeed) {
    return absl::InvalidArgumentError(absl::StrCat(
        "seed must be in 0..", kMaxSeed, " (2^63-1), got ", spec.seed()));
  }
  if (!shard::v1::TailPolicy_IsValid(spec.tail())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tail must be TAIL_POLICY_PAD, _DROP or _UNEVEN, got ", spec.tail()));
  }
  if (!shard::v1::ShuffleAlgorithm_IsValid(spec.shuffle_algorithm())) {
    return absl::InvalidArgumentError(
        absl::StrCat("shuffle_algorithm must be SHUFFLE_ALGORITHM_TORCH, "
                     "_FEISTEL or _BLOCK, got ",
                     spec.shuffle_algorithm()));
  }
  if (spec.shuffle_algorithm() == shard::v1::SHUFFLE_ALGORITHM_BLOCK) {
    if (spec.block_size() == 0 || spec.window_blocks() > 4096) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SHUFFLE_ALGORITHM_BLOCK needs block_size >= 1 and window_blocks "
          "<= 4096, got block_size ",
          spec.block_size(), " window_blocks ", spec.window_blocks()));
    }
  } else if (spec.block_size() != 0 || spec.window_blocks() != 0) {
    return absl::InvalidArgumentError(
        "block_size and window_blocks apply only to SHUFFLE_ALGORITHM_BLOCK");
  }
  if (!shard::v1::TorchRandperm_IsValid(spec.torch_randperm())) {
    return absl::InvalidArgumentError(
        absl::StrCat("torch_randperm must be TORCH_RANDPERM_LEGACY or _2_6, "
                     "got ",
                     spec.torch_randperm()));
  }
  return absl::OkStatus();
}

// `spec` with every unset field at its default.
JobSpec WithDefaults(const JobSpec& spec) {
  JobSpec normal = spec;
  if (spec.sources_size() > 0) {
    const std::vector<uint64_t> counts = SourceCounts(spec);
    normal.set_dataset_size(SourceEnds(spec).back());
    normal.set_epoch_size(
        std::accumulate(counts.begin(), counts.end(), uint64_t{0}));
  }
  if (normal.min_world_size() == 0)
    normal.set_min_world_size(spec.world_size());
  if (normal.max_world_size() == 0)
    normal.set_max_world_size(spec.world_size());
  if (!normal.has_shuffle()) normal.set_shuffle(true);
  if (normal.tail() == shard::v1::TAIL_POLICY_UNSPECIFIED) {
    normal.set_tail(shard::v1::TAIL_POLICY_PAD);
  }
  if (normal.shuffle_algorithm() == shard::v1::SHUFFLE_ALGORITHM_UNSPECIFIED) {
    normal.set_shuffle_algorithm(shard::v1::SHUFFLE_ALGORITHM_TORCH);
  }
  if (normal.torch_randperm() == shard::v1::TORCH_RANDPERM_UNSPECIFIED) {
    normal.set_torch_randperm(shard::v1::TORCH_RANDPERM_2_6);
  }
  if (normal.shuffle_algorithm() == shard::v1::SHUFFLE_ALGORITHM_BLOCK &&
      normal.window_blocks() == 0) {
    normal.set_window_blocks(8);
  }
  if (normal.has_batches() && normal.batches().cost_model() ==
                                  shard::v1::BATCH_COST_MODEL_UNSPECIFIED) {
    normal.mutable_batches()->set_cost_model(
        shard::v1::BATCH_COST_MODEL_PADDED);
  }
  return normal;
}

// INVALID_ARGUMENT unless a normalised spec's balanced batches (if any) are
// well-formed and fit the rest of the job.
absl::Status CheckBatches(const JobSpec& normal) {
  if (!normal.has_batches()) return absl::OkStatus();
  const shard::v1::BatchPolicy& batches = normal.batches();
  if ((batches.batch_size() == 0) == (batches.batch_tokens() == 0)) {
    return absl::InvalidArgumentError(
        "balanced batches need exactly one of batch_size and batch_tokens");
  }
  if (batches.batch_size() > kMaxBatchSize ||
      batches.batch_tokens() > kMaxBatchTokens ||
      batches.window() > kMaxBatchWindow) {
    return absl::InvalidArgumentError(absl::StrCat(
        "need batch_size <= ", kMaxBatchSize,
        ", batch_tokens <= ", kMaxBatchTokens,
        " and window <= ", kMaxBatchWindow, ", got ", batches.batch_size(),
        ", ", batches.batch_tokens(), " and ", batches.window()));
  }
  if (!shard::v1::BatchCostModel_IsValid(batches.cost_model())) {
    return absl::InvalidArgumentError(
        absl::StrCat("cost_model must be BATCH_COST_MODEL_PADDED or _SUM, got ",
                     batches.cost_model()));
  }
  if (!IsSha256Hex(batches.costs_sha256())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "costs_sha256 must be 64 lowercase hex digits (the SHA-256 PutCosts "
        "was given), got \"",
        absl::CHexEscape(batches.costs_sha256().substr(0, 80)), "\""));
  }
  if (normal.dataset_size() > kMaxCostedSamples) {
    return absl::InvalidArgumentError(
        absl::StrCat("balanced batches take at most ", kMaxCostedSamples,
                     " samples, got dataset_size ", normal.dataset_size()));
  }
  if (normal.tail() == shard::v1::TAIL_POLICY_UNEVEN) {
    return absl::InvalidArgumentError(
        "balanced batches need the pad or drop tail: every rank gets a "
        "micro-batch in every step");
  }
  if (batches.attention_length() > 0 &&
      (batches.batch_tokens() == 0 ||
       batches.cost_model() != shard::v1::BATCH_COST_MODEL_SUM)) {
    return absl::InvalidArgumentError(
        "attention_length balances packed sequences by time under a token "
        "budget: it needs batch_tokens and the sum cost model");
  }
  if (batches.attention_length() > kMaxAttentionLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attention_length must be in 1..", kMaxAttentionLength,
        " (0: balance by tokens), got ", batches.attention_length()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<JobSpec> NormalizeJobSpec(const JobSpec& spec,
                                         uint64_t max_order_bytes) {
  if (absl::Status s = CheckGivenFields(spec); !s.ok()) return s;
  JobSpec normal = WithDefaults(spec);
  if (normal.min_world_size() > normal.world_size() ||
      normal.world_size() > normal.max_world_size() ||
      normal.max_world_size() > kMaxWorldSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "need min_world_size <= world_size <= max_world_size <= ",
        kMaxWorldSize, ", got ", normal.min_world_size(),
        " <= ", normal.world_size(), " <= ", normal.max_world_size()));
  }
  // A window spans block_size * window_blocks indices; the block order
  // divides by that span, so it must not wrap. A block (or window) larger
  // than the dataset is fine.
  if (normal.shuffle_algorithm() == shard::v1::SHUFFLE_ALGORITHM_BLOCK &&
      normal.block_size() > UINT64_MAX / normal.window_blocks()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "block_size * window_blocks must fit in 64 bits, got block_size ",
        normal.block_size(), " * window_blocks ", normal.window_blocks()));
  }
  if (absl::Status s = CheckBatches(normal); !s.ok()) return s;
  if (EpochOrderBytes(normal) > max_order_bytes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a shuffled epoch order of ", EpochSize(normal), " samples needs ",
        EpochOrderBytes(normal), " bytes, above this coordinator's limit of ",
        max_order_bytes, " (--max-order-bytes)"));
  }
  return normal;
}

std::string DescribeBatchPolicy(const JobSpec& spec) {
  if (!spec.has_batches()) return "";
  const shard::v1::BatchPolicy& batches = spec.batches();
  return absl::StrCat(
      batches.batch_size() > 0
          ? absl::StrCat("batch_size=", batches.batch_size())
          : absl::StrCat("batch_tokens=", batches.batch_tokens()),
      " cost=",
      batches.cost_model() == shard::v1::BATCH_COST_MODEL_SUM ? "sum"
                                                              : "padded",
      batches.attention_length() > 0
          ? absl::StrCat(" attention_length=", batches.attention_length())
          : "",
      batches.window() > 0 ? absl::StrCat(" window=", batches.window()) : "");
}

std::string DescribeJobSpec(const JobSpec& spec) {
  const std::string mixture =
      spec.sources_size() == 0
          ? ""
          : absl::StrCat(" sources=", spec.sources_size(),
                         " epoch_size=", spec.epoch_size());
  return absl::StrCat(
      "N=", spec.dataset_size(), mixture, " W=", spec.world_size(),
      " seed=", spec.seed(), " shuffle=", spec.shuffle() ? "true" : "false",
      " tail=", TailName(spec.tail()),
      spec.torch_randperm() == shard::v1::TORCH_RANDPERM_LEGACY
          ? " randperm=legacy"
          : " randperm=2.6",
      spec.has_batches() ? absl::StrCat(" ", DescribeBatchPolicy(spec)) : "");
}

namespace {

// The spec with each share written one way: repeat 1 as no share.
JobSpec WithCanonicalShares(JobSpec spec) {
  for (shard::v1::Source& source : *spec.mutable_sources()) {
    if (source.share_case() == shard::v1::Source::kRepeat &&
        source.repeat() == 1.0) {
      source.clear_share();
    }
  }
  return spec;
}

}  // namespace

std::string JobSpecDifference(const JobSpec& from, const JobSpec& to) {
  constexpr size_t kMaxListed = 8;
  // The common case (every join names the job's own spec) copies nothing.
  if (google::protobuf::util::MessageDifferencer::Equals(from, to)) return "";
  std::string report;
  {
    // The report is complete once the differencer (its reporter) is gone.
    google::protobuf::util::MessageDifferencer differencer;
    differencer.ReportDifferencesToString(&report);
    if (differencer.Compare(WithCanonicalShares(from),
                            WithCanonicalShares(to))) {
      return "";
    }
  }
  std::vector<absl::string_view> lines =
      absl::StrSplit(report, '\n', absl::SkipWhitespace());
  const size_t more = lines.size() > kMaxListed ? lines.size() - kMaxListed : 0;
  lines.resize(lines.size() - more);
  std::string difference = absl::StrJoin(lines, "; ");
  if (more > 0) absl::StrAppend(&difference, "; and ", more, " more");
  return difference;
}

namespace {

Tail TailOf(const JobSpec& spec) {
  if (spec.tail() == shard::v1::TAIL_POLICY_DROP) return Tail::kDrop;
  if (spec.tail() == shard::v1::TAIL_POLICY_UNEVEN) return Tail::kUneven;
  return Tail::kPad;
}

}  // namespace

ShardLayout LayoutOf(const JobSpec& spec) {
  return LayoutOf(spec, {EpochLink{0, spec.world_size()}});
}

ShardLayout LayoutOf(const JobSpec& spec,
                     const std::vector<EpochLink>& worlds) {
  const EpochLink& last = worlds.back();
  if (spec.has_batches()) {
    return ShardLayout::Batched(EpochSize(spec), last.world_size, TailOf(spec),
                                EpochWorldsOf(spec, worlds).total(), last.base);
  }
  return ShardLayout(EpochSize(spec), last.world_size, TailOf(spec), last.base);
}

uint64_t EpochOrderBytes(const JobSpec& spec) {
  // Only the torch order is materialised (UNSPECIFIED means torch).
  if (!spec.shuffle() ||
      spec.shuffle_algorithm() == shard::v1::SHUFFLE_ALGORITHM_FEISTEL ||
      spec.shuffle_algorithm() == shard::v1::SHUFFLE_ALGORITHM_BLOCK) {
    return 0;
  }
  // A mixture's order holds positions of its chosen list.
  const uint64_t n = EpochSize(spec);
  const uint64_t entry = n <= (uint64_t{1} << 32) ? 4 : 8;
  return n > UINT64_MAX / entry ? UINT64_MAX : n * entry;
}

namespace {

// The shuffle of an epoch's positions 0..EpochSize(spec)-1.
EpochOrder StartShuffle(const JobSpec& spec, uint64_t epoch) {
  const uint64_t n = EpochSize(spec);
  if (!spec.shuffle()) return EpochOrder::Identity(n);
  if (spec.shuffle_algorithm() == shard::v1::SHUFFLE_ALGORITHM_FEISTEL) {
    return EpochOrder::Feistel(n, MixKey(spec.seed() + epoch));
  }
  if (spec.shuffle_algorithm() == shard::v1::SHUFFLE_ALGORITHM_BLOCK) {
    return EpochOrder::Blocks(n, spec.block_size(), spec.window_blocks(),
                              MixKey(spec.seed() + epoch));
  }
  const RandpermVariant variant =
      spec.torch_randperm() == shard::v1::TORCH_RANDPERM_LEGACY
          ? RandpermVariant::kLegacy
          : RandpermVariant::kTorch26;
  // Python adds seed + epoch as integers; torch keeps the low 32 bits, so
  // unsigned wrap-around is exact.
  return EpochOrder::PendingTorchShuffle(n, spec.seed() + epoch, variant);
}

}  // namespace

EpochOrder BuildEpochOrder(const JobSpec& spec, uint64_t epoch,
                           const std::atomic<bool>* cancelled) {
  EpochOrder order = StartEpochOrder(spec, epoch);
  order.Shuffle(cancelled);
  return order;
}

EpochOrder StartEpochOrder(const JobSpec& spec, uint64_t epoch) {
  EpochOrder order = StartShuffle(spec, epoch);
  if (spec.sources_size() > 0) order.SelectFrom(MixtureEpoch(spec, epoch));
  return order;
}

BatchPolicy BatchPolicyOf(const shard::v1::JobSpec& spec) {
  BatchPolicy policy;
  policy.batch_size = spec.batches().batch_size();
  policy.batch_tokens = spec.batches().batch_tokens();
  policy.cost_model =
      spec.batches().cost_model() == shard::v1::BATCH_COST_MODEL_SUM
          ? BatchCostModel::kSum
          : BatchCostModel::kPadded;
  policy.window = spec.batches().window();
  policy.attention_length = spec.batches().attention_length();
  policy.costs_total = spec.batches().costs_total();
  policy.costs_count = spec.dataset_size();
  return policy;
}

EpochBatches EpochBatchesOf(const shard::v1::JobSpec& spec,
                            uint32_t world_size) {
  return EpochBatches(EpochSize(spec), world_size, TailOf(spec),
                      BatchPolicyOf(spec));
}

EpochWorlds EpochWorldsOf(const shard::v1::JobSpec& spec,
                          std::vector<EpochLink> worlds) {
  return EpochWorlds(EpochSize(spec), TailOf(spec), BatchPolicyOf(spec),
                     std::move(worlds));
}

}  // namespace shard::plan
