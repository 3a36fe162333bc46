// A deterministic, learnable synthetic dataset: noisy linear regression.
//
// Example i has kFeatures features drawn from a hash of (i, feature) in
// [-1, 1] and the target w . x + noise, with fixed weights w and noise in
// [-0.05, 0.05]. Any process computes the same example for the same index,
// so ranks need no shared storage. Stateless and thread-safe.
#ifndef TRAINER_SYNTHETIC_DATASET_H_
#define TRAINER_SYNTHETIC_DATASET_H_

#include <cstdint>

#include "trainer/indexed_dataset.h"

namespace shard::trainer {

class SyntheticRegression : public IndexedDataset {
 public:
  static constexpr int64_t kFeatures = 16;

  // Examples index_offset .. index_offset + size - 1 of the generator, so a
  // held-out evaluation set can follow the training set.
  explicit SyntheticRegression(uint64_t size, uint64_t index_offset = 0)
      : size_(size), index_offset_(index_offset) {}

  // Features [B, kFeatures], targets [B, 1].
  ExampleBatch get_batch(c10::ArrayRef<size_t> indices) override;
  torch::optional<size_t> size() const override { return size_; }

 private:
  uint64_t size_;
  uint64_t index_offset_;
};

}  // namespace shard::trainer

#endif  // TRAINER_SYNTHETIC_DATASET_H_
