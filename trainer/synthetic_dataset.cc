#include "trainer/synthetic_dataset.h"

#include "torch/torch.h"

namespace shard::trainer {
namespace {

// splitmix64: a fixed, well-mixed hash of a 64-bit value.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1] from (index, slot).
float Uniform(uint64_t index, uint64_t slot) {
  const uint64_t bits = Mix(index * 0x100000001b3ull + slot) >> 40;  // 24 bits
  return static_cast<float>(bits) / static_cast<float>(1 << 23) - 1.0f;
}

}  // namespace

ExampleBatch SyntheticRegression::get_batch(c10::ArrayRef<size_t> indices) {
  ExampleBatch batch;
  batch.indices = CheckedIndices(indices, size_, "sample");
  const int64_t rows = static_cast<int64_t>(indices.size());
  batch.features = torch::empty({rows, kFeatures}, torch::kFloat32);
  batch.targets = torch::empty({rows, 1}, torch::kFloat32);
  float* x = batch.features.data_ptr<float>();
  float* targets = batch.targets.data_ptr<float>();
  for (int64_t row = 0; row < rows; ++row, x += kFeatures) {
    const uint64_t key = indices[row] + index_offset_;
    float y = 0;
    for (int64_t j = 0; j < kFeatures; ++j) {
      x[j] = Uniform(key, j);
      const float weight = 0.5f * static_cast<float>(j % 5 - 2);
      y += weight * x[j];
    }
    targets[row] = y + 0.05f * Uniform(key, kFeatures);
  }
  return batch;
}

}  // namespace shard::trainer
