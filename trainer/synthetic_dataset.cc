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

IndexedExample SyntheticRegression::get(size_t index) {
  IndexedExample example;
  example.index = static_cast<int64_t>(index);
  const uint64_t key = index + index_offset_;
  example.features = torch::empty({kFeatures}, torch::kFloat32);
  float* x = example.features.data_ptr<float>();
  float y = 0;
  for (int64_t j = 0; j < kFeatures; ++j) {
    x[j] = Uniform(key, j);
    const float weight = 0.5f * static_cast<float>(j % 5 - 2);
    y += weight * x[j];
  }
  y += 0.05f * Uniform(key, kFeatures);
  example.target = torch::full({1}, y, torch::kFloat32);
  return example;
}

std::pair<torch::Tensor, torch::Tensor> Collate(
    const std::vector<IndexedExample>& batch) {
  std::vector<torch::Tensor> features, targets;
  features.reserve(batch.size());
  targets.reserve(batch.size());
  for (const IndexedExample& example : batch) {
    features.push_back(example.features);
    targets.push_back(example.target);
  }
  return {torch::stack(features), torch::stack(targets)};
}

}  // namespace shard::trainer
