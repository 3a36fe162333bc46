// Mixtures: one job over several sources (docs/mixtures.md specifies the
// algorithm exactly; tests/conformance/mixture_reference.py is an
// independent implementation of it).
//
// The dataset is the sources one after another: source k's sample j is
// global index offset_k + j. Each epoch takes exactly count_k samples from
// source k (largest-remainder apportionment of the sources' quotas; they add
// up to the epoch size E). Within a source the epochs walk one keyed
// permutation of the source after another (a "pass"), so a down-sampled
// source serves every sample once before any twice; a source whose count is
// a whole number of passes needs no permutation and takes them in order.
// The epoch's chosen samples, source after source, form a list of E
// samples; the job's shuffle, tail policy and strided split then apply to
// positions 0..E-1 of that list exactly as to a plain job of E samples.
//
// Pure functions and immutable values; thread-safe.
#ifndef COMMON_PLAN_MIXTURES_MIXTURE_H_
#define COMMON_PLAN_MIXTURES_MIXTURE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "common/plan/shuffles/keyed_permutation.h"
#include "shard/v1/shard.pb.h"

namespace shard::plan {

// The largest dataset, a plain job's or a mixture's sources together:
// keeps total() of any layout below 2^64.
inline constexpr uint64_t kMaxDatasetSize = uint64_t{1} << 62;
inline constexpr int kMaxSources = 1024;
// Largest epoch of a mixture (positions).
inline constexpr uint64_t kMaxMixtureEpochSize = uint64_t{1} << 40;
// Largest weight and repeat; both are taken in units of 2^-32.
inline constexpr double kMaxWeight = 2147483648.0;  // 2^31
inline constexpr double kMaxRepeat = 1048576.0;     // 2^20

// Checks the sources and epoch_size of a spec as given (nothing to check for
// a plain job): INVALID_ARGUMENT naming the source and what is wrong.
absl::Status CheckSources(const shard::v1::JobSpec& spec);
// The part of CheckSources that needs no sizes (a trainer checks its
// --source options with it before it reads the files): how many sources,
// their names (valid, distinct) and shares (in range; weights on every
// source or none).
absl::Status CheckSourceNamesAndShares(const shard::v1::JobSpec& spec);

// The samples each source gives every epoch of a spec whose sources passed
// CheckSources (empty for a plain job). With weights the counts add up to
// spec.epoch_size(); otherwise to the rounded sum of the quotas.
std::vector<uint64_t> SourceCounts(const shard::v1::JobSpec& spec);

// Where each source ends in the global indices (source k holds
// [ends[k-1], ends[k]), source 0 from 0), for a spec whose sources passed
// CheckSources; empty for a plain job.
std::vector<uint64_t> SourceEnds(const shard::v1::JobSpec& spec);

// The source holding global index `index` given the sources' `ends` (as
// SourceEnds gives them): the k with ends[k-1] <= index < ends[k];
// ends.size() when the index lies past the last source.
size_t SourceOf(const std::vector<uint64_t>& ends, uint64_t index);

// Positions per epoch: the dataset size for a plain job, the epoch size of
// a normalised mixture.
inline uint64_t EpochSize(const shard::v1::JobSpec& spec) {
  return spec.sources_size() == 0 ? spec.dataset_size() : spec.epoch_size();
}

// The samples one epoch of a normalised mixture chooses, in source order.
class MixtureEpoch {
 public:
  MixtureEpoch(const shard::v1::JobSpec& spec, uint64_t epoch);

  // E, the epoch size.
  uint64_t size() const { return size_; }
  // Global index of the j-th chosen sample; requires j < size().
  uint64_t Chosen(uint64_t j) const;
  // One past the largest global index Chosen() may return: the sources'
  // samples together (which may exceed 2^32 while size() does not).
  uint64_t IndexBound() const { return index_bound_; }

 private:
  struct Part {
    uint64_t first;   // The part's first position in the chosen list.
    uint64_t offset;  // The source's first global index.
    uint64_t size;    // The source's samples.
    // Where the epoch starts in the source's walk (after epoch * count
    // samples): pass first_pass (mod 2^64), at start_in_pass.
    uint64_t first_pass;
    uint64_t start_in_pass;
    bool whole_passes;  // count is a multiple of size: no permutation.
    uint64_t key;       // Keys the source's passes (with the pass number).
    // The permutations of the passes this epoch reads, from first_pass on
    // (when there are at most kCachedPasses of them; else made per call).
    std::vector<FeistelPermutation> passes;
  };
  static constexpr uint64_t kCachedPasses = 64;

  // The permutation of the part's source in pass `pass`.
  static FeistelPermutation PassOf(const Part& part, uint64_t pass);
  // Fills part.passes for an epoch that takes `count` samples of it.
  static void CachePasses(Part& part, uint64_t count);

  uint64_t size_ = 0;
  uint64_t index_bound_ = 0;
  std::vector<Part> parts_;  // Sources that give samples, by `first`.
};

}  // namespace shard::plan

#endif  // COMMON_PLAN_MIXTURES_MIXTURE_H_
