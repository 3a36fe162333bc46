// A deterministic, learnable synthetic dataset: noisy linear regression.
//
// Example i has kFeatures features drawn from a hash of (i, feature) in
// [-1, 1] and the target w . x + noise, with fixed weights w and noise in
// [-0.05, 0.05]. Any process computes the same example for the same index,
// so ranks need no shared storage. Stateless and thread-safe.
#ifndef TRAINER_SYNTHETIC_DATASET_H_
#define TRAINER_SYNTHETIC_DATASET_H_

#include <cstdint>
#include <vector>

#include "torch/data/datasets/base.h"
#include "torch/types.h"

namespace shard::trainer {

// One training example that remembers its sample index.
struct IndexedExample {
  torch::Tensor features;  // [kFeatures] float
  torch::Tensor target;    // [1] float
  int64_t index = 0;
};

// The interface a trainer reads: sample index -> example.
class IndexedDataset
    : public torch::data::datasets::Dataset<IndexedDataset, IndexedExample> {
 public:
  using ExampleType = IndexedExample;
};

class SyntheticRegression : public IndexedDataset {
 public:
  static constexpr int64_t kFeatures = 16;

  // Examples index_offset .. index_offset + size - 1 of the generator, so a
  // held-out evaluation set can follow the training set.
  explicit SyntheticRegression(uint64_t size, uint64_t index_offset = 0)
      : size_(size), index_offset_(index_offset) {}

  IndexedExample get(size_t index) override;
  torch::optional<size_t> size() const override { return size_; }

 private:
  uint64_t size_;
  uint64_t index_offset_;
};

// Stacks a batch into (features [B, kFeatures], targets [B, 1]).
std::pair<torch::Tensor, torch::Tensor> Collate(
    const std::vector<IndexedExample>& batch);

}  // namespace shard::trainer

#endif  // TRAINER_SYNTHETIC_DATASET_H_
