#include "common/plan/mixtures/mixture.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/plan/shuffles/keyed_permutation.h"

namespace shard::plan {
namespace {

using shard::v1::JobSpec;
using shard::v1::Source;
using u128 = unsigned __int128;

// Weights and repeats are taken in units of 2^-32 (rounded to nearest, ties
// to even), so that every count is exact integer arithmetic.
constexpr double kUnitScale = 4294967296.0;  // 2^32
constexpr u128 kUnit = u128{1} << 32;

uint64_t InUnits(double value) {
  return static_cast<uint64_t>(std::nearbyint(value * kUnitScale));
}

bool HasWeight(const Source& source) {
  return source.share_case() == Source::kWeight;
}

// Each source's quota numerator over one common denominator, and the epoch
// size they are apportioned to.
struct Quotas {
  std::vector<u128> numerators;
  u128 denominator = kUnit;
  u128 total = 0;
};

// A spec whose sources passed the per-source checks.
Quotas QuotasOf(const JobSpec& spec) {
  Quotas quotas;
  const bool weighted = HasWeight(spec.sources(0));
  u128 sum = 0;
  for (const Source& source : spec.sources()) {
    u128 numerator = 0;
    switch (source.share_case()) {
      case Source::kWeight:
        numerator = InUnits(source.weight());  // Times E below.
        break;
      case Source::kRepeat:
        numerator = u128{InUnits(source.repeat())} * source.size();
        break;
      case Source::kChoose:
        numerator = u128{source.choose()} * kUnit;
        break;
      case Source::SHARE_NOT_SET:
        numerator = u128{source.size()} * kUnit;
        break;
    }
    quotas.numerators.push_back(numerator);
    sum += numerator;
  }
  if (weighted) {
    quotas.denominator = sum;
    quotas.total = spec.epoch_size();
    for (u128& numerator : quotas.numerators) numerator *= spec.epoch_size();
  } else {
    quotas.total = (sum + kUnit / 2) / kUnit;  // Rounded half up.
  }
  return quotas;
}

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
         c == '_' || c == '-';
}

absl::Status CheckName(const Source& source, int k) {
  const std::string& name = source.name();
  if (name.empty() || name.size() > 64 ||
      !std::all_of(name.begin(), name.end(), IsNameChar)) {
    return absl::InvalidArgumentError(
        absl::StrCat("source ", k,
                     ": name must be 1..64 characters of "
                     "[A-Za-z0-9._-], got \"",
                     absl::CHexEscape(name), "\""));
  }
  return absl::OkStatus();
}

// A weight or repeat: finite, in (0, max], at least one unit.
absl::Status CheckFraction(const Source& source, absl::string_view what,
                           double value, double max) {
  if (!std::isfinite(value) || value <= 0 || value > max ||
      InUnits(value) == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("source \"", source.name(), "\": ", what,
                     " must be in [2^-32, ", max, "], got ", value));
  }
  return absl::OkStatus();
}

absl::Status CheckShare(const Source& source) {
  switch (source.share_case()) {
    case Source::kWeight:
      return CheckFraction(source, "weight", source.weight(), kMaxWeight);
    case Source::kRepeat:
      return CheckFraction(source, "repeat", source.repeat(), kMaxRepeat);
    case Source::kChoose:
      if (source.choose() == 0 || source.choose() > kMaxMixtureEpochSize) {
        return absl::InvalidArgumentError(absl::StrCat(
            "source \"", source.name(), "\": choose must be in 1..",
            kMaxMixtureEpochSize, ", got ", source.choose()));
      }
      return absl::OkStatus();
    case Source::SHARE_NOT_SET:
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSourceNamesAndShares(const JobSpec& spec) {
  if (spec.sources_size() > kMaxSources) {
    return absl::InvalidArgumentError(
        absl::StrCat("a job has at most ", kMaxSources, " sources, got ",
                     spec.sources_size()));
  }
  absl::flat_hash_set<std::string> names;
  for (int k = 0; k < spec.sources_size(); ++k) {
    const Source& source = spec.sources(k);
    if (absl::Status s = CheckName(source, k); !s.ok()) return s;
    if (!names.insert(source.name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("two sources are named \"", source.name(), "\""));
    }
    if (absl::Status s = CheckShare(source); !s.ok()) return s;
    if (HasWeight(source) != HasWeight(spec.sources(0))) {
      return absl::InvalidArgumentError(
          absl::StrCat("source \"", source.name(),
                       "\": either every source has a weight "
                       "or none has (the others take repeat or choose)"));
    }
  }
  return absl::OkStatus();
}

namespace {

// The sizes of every source (after CheckSourceNamesAndShares); returns the
// sources' total size.
absl::StatusOr<uint64_t> CheckEachSize(const JobSpec& spec) {
  uint64_t total = 0;
  for (const Source& source : spec.sources()) {
    if (source.size() == 0 || source.size() > kMaxDatasetSize - total) {
      return absl::InvalidArgumentError(
          absl::StrCat("source \"", source.name(),
                       "\": size must be >= 1 and the "
                       "sources together at most ",
                       kMaxDatasetSize, ", got ", source.size()));
    }
    total += source.size();
  }
  return total;
}

// The job-level rules: dataset_size, epoch_size, the shuffle.
absl::Status CheckMixtureFields(const JobSpec& spec, uint64_t total_size) {
  if (spec.dataset_size() != 0 && spec.dataset_size() != total_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("dataset_size of a mixture is its sources' total, ",
                     total_size, " (or 0), got ", spec.dataset_size()));
  }
  if (spec.shuffle_algorithm() == shard::v1::SHUFFLE_ALGORITHM_BLOCK) {
    return absl::InvalidArgumentError(
        "a mixture shuffles with SHUFFLE_ALGORITHM_TORCH or _FEISTEL");
  }
  const bool weighted = HasWeight(spec.sources(0));
  if (weighted && spec.epoch_size() == 0) {
    return absl::InvalidArgumentError(
        "sources with weights need the job's epoch_size");
  }
  const u128 total = QuotasOf(spec).total;
  if (!weighted && spec.epoch_size() != 0 && spec.epoch_size() != total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "without weights, epoch_size may only restate the epoch the "
        "sources' repeat / choose make, ",
        static_cast<uint64_t>(std::min<u128>(total, UINT64_MAX)),
        " (give weights for another), got ", spec.epoch_size()));
  }
  if (total == 0 || total > kMaxMixtureEpochSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("the sources make epochs of ",
                     static_cast<uint64_t>(std::min<u128>(total, UINT64_MAX)),
                     " samples; an epoch must hold 1..", kMaxMixtureEpochSize));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSources(const JobSpec& spec) {
  if (spec.sources_size() == 0) {
    if (spec.epoch_size() != 0) {
      return absl::InvalidArgumentError(
          "epoch_size applies only to a job with sources");
    }
    return absl::OkStatus();
  }
  if (absl::Status s = CheckSourceNamesAndShares(spec); !s.ok()) return s;
  absl::StatusOr<uint64_t> total_size = CheckEachSize(spec);
  if (!total_size.ok()) return total_size.status();
  return CheckMixtureFields(spec, *total_size);
}

std::vector<uint64_t> SourceCounts(const JobSpec& spec) {
  if (spec.sources_size() == 0) return {};
  const Quotas quotas = QuotasOf(spec);
  const size_t n = quotas.numerators.size();
  std::vector<uint64_t> counts(n);
  std::vector<u128> remainders(n);
  u128 given = 0;
  for (size_t k = 0; k < n; ++k) {
    counts[k] =
        static_cast<uint64_t>(quotas.numerators[k] / quotas.denominator);
    remainders[k] = quotas.numerators[k] % quotas.denominator;
    given += counts[k];
  }
  // The seats left go to the largest remainders, the first source on ties.
  std::vector<size_t> by_remainder(n);
  std::iota(by_remainder.begin(), by_remainder.end(), 0);
  std::stable_sort(
      by_remainder.begin(), by_remainder.end(),
      [&](size_t a, size_t b) { return remainders[a] > remainders[b]; });
  const u128 left = quotas.total - given;  // 0 <= left < n.
  for (size_t i = 0; i < static_cast<size_t>(left); ++i) {
    ++counts[by_remainder[i]];
  }
  return counts;
}

std::vector<uint64_t> SourceEnds(const JobSpec& spec) {
  std::vector<uint64_t> ends;
  for (const Source& source : spec.sources()) {
    ends.push_back((ends.empty() ? 0 : ends.back()) + source.size());
  }
  return ends;
}

MixtureEpoch::MixtureEpoch(const JobSpec& spec, uint64_t epoch) {
  const std::vector<uint64_t> counts = SourceCounts(spec);
  const std::vector<uint64_t> ends = SourceEnds(spec);
  const uint64_t seed_key = MixKey(spec.seed());
  index_bound_ = ends.empty() ? 0 : ends.back();
  for (size_t k = 0; k < counts.size(); ++k) {
    const uint64_t size = spec.sources(static_cast<int>(k)).size();
    if (counts[k] > 0) {
      Part part;
      part.first = size_;
      part.offset = ends[k] - size;
      part.size = size;
      const u128 taken_before = u128{epoch} * counts[k];
      part.first_pass = static_cast<uint64_t>(taken_before / size);
      part.start_in_pass = static_cast<uint64_t>(taken_before % size);
      part.whole_passes = counts[k] % size == 0;
      part.key = MixKey(seed_key + k);
      CachePasses(part, counts[k]);
      parts_.push_back(std::move(part));
      size_ += counts[k];
    }
  }
}

size_t SourceOf(const std::vector<uint64_t>& ends, uint64_t index) {
  return std::upper_bound(ends.begin(), ends.end(), index) - ends.begin();
}

uint64_t MixtureEpoch::Chosen(uint64_t j) const {
  const auto after = std::upper_bound(parts_.begin(), parts_.end(), j,
                                      [](uint64_t position, const Part& part) {
                                        return position < part.first;
                                      });
  const Part& part = *(after - 1);
  // Below size + count <= 2^62 + 2^40: 64-bit arithmetic is exact.
  const uint64_t walked = part.start_in_pass + (j - part.first);
  const uint64_t in_pass = walked % part.size;
  if (part.whole_passes) return part.offset + in_pass;
  const uint64_t later_passes = walked / part.size;
  if (later_passes < part.passes.size()) {
    return part.offset + part.passes[later_passes].At(in_pass);
  }
  return part.offset + PassOf(part, part.first_pass + later_passes).At(in_pass);
}

FeistelPermutation MixtureEpoch::PassOf(const Part& part, uint64_t pass) {
  // The pass number is taken mod 2^64.
  return FeistelPermutation(part.size, MixKey(part.key + pass));
}

void MixtureEpoch::CachePasses(Part& part, uint64_t count) {
  if (part.whole_passes) return;
  const uint64_t passes = (part.start_in_pass + count - 1) / part.size + 1;
  if (passes > kCachedPasses) return;
  for (uint64_t i = 0; i < passes; ++i) {
    part.passes.push_back(PassOf(part, part.first_pass + i));
  }
}

}  // namespace shard::plan
