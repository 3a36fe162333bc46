// What shard-train reads: the sample indices of a batch -> one ExampleBatch,
// assembled with whole-batch tensor operations (one gather from memory, or
// one buffer filled record by record) rather than one tensor per sample
// stacked afterwards. Implementations are thread-safe (DataLoader workers
// call get_batch() concurrently) and throw std::out_of_range for an index
// >= size() and std::runtime_error for unreadable data (the libtorch
// boundary).
#ifndef TRAINER_INDEXED_DATASET_H_
#define TRAINER_INDEXED_DATASET_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "torch/data/datasets/base.h"
#include "torch/types.h"

namespace shard::trainer {

// A batch of examples and the sample index of each row.
struct ExampleBatch {
  torch::Tensor features;        // [B, example shape...] float32
  torch::Tensor targets;         // [B] int64 classes, or [B, 1] float32
  std::vector<int64_t> indices;  // Row i is sample indices[i].
  size_t size() const { return indices.size(); }
};

class IndexedDataset
    : public torch::data::datasets::BatchDataset<IndexedDataset, ExampleBatch> {
};

// A copyable handle on a dataset, as torch's data loader wants one.
class SharedDataset : public IndexedDataset {
 public:
  explicit SharedDataset(std::shared_ptr<IndexedDataset> inner)
      : inner_(std::move(inner)) {}
  ExampleBatch get_batch(c10::ArrayRef<size_t> indices) override {
    return inner_->get_batch(indices);
  }
  torch::optional<size_t> size() const override { return inner_->size(); }

 private:
  std::shared_ptr<IndexedDataset> inner_;
};

// `indices` as int64 after checking each is below `size`; std::out_of_range
// naming `what` ("image", "record", ...) otherwise.
std::vector<int64_t> CheckedIndices(c10::ArrayRef<size_t> indices,
                                    uint64_t size, const char* what);

}  // namespace shard::trainer

#endif  // TRAINER_INDEXED_DATASET_H_
