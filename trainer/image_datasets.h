// Image-classification datasets for shard-train: batches of features
// [B, 1, rows, cols] (float, pixels / 255) and int64 class labels [B].
//   InMemoryImages  a split read into memory (Fashion-MNIST idx files): a
//                   batch is one gather from the split's bytes;
//   RecordImages    image records read by index from record files (only the
//                   records of the requested indices are read, into one
//                   buffer per batch).
// Both are thread-safe for get_batch(); errors reading a record are thrown
// as std::runtime_error (the libtorch boundary), naming the file and
// offset.
#ifndef TRAINER_IMAGE_DATASETS_H_
#define TRAINER_IMAGE_DATASETS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "trainer/data/idx_file.h"
#include "trainer/data/record_file.h"
#include "trainer/indexed_dataset.h"

namespace shard::trainer {

class InMemoryImages : public IndexedDataset {
 public:
  // The first `size` examples of `split` (all when size is 0).
  InMemoryImages(std::shared_ptr<const data::ImageSplit> split, uint64_t size);
  ExampleBatch get_batch(c10::ArrayRef<size_t> indices) override;
  torch::optional<size_t> size() const override { return size_; }

 private:
  std::shared_ptr<const data::ImageSplit> split_;
  uint64_t size_;
  // Views of split_'s bytes (never written): [size, 1, rows, cols] pixels
  // and [size] labels, uint8.
  torch::Tensor pixels_;
  torch::Tensor labels_;
};

class RecordImages : public IndexedDataset {
 public:
  // The first `size` records of `records` (all when size is 0); the records
  // must be image records (rows, cols > 0).
  RecordImages(std::shared_ptr<const data::RecordSet> records, uint64_t size);
  ExampleBatch get_batch(c10::ArrayRef<size_t> indices) override;
  torch::optional<size_t> size() const override { return size_; }

 private:
  std::shared_ptr<const data::RecordSet> records_;
  uint64_t size_;
};

// A batch from image bytes: `pixels` [B, 1, rows, cols] and `labels` [B],
// both uint8, for the samples `indices`.
ExampleBatch ImageBatch(std::vector<int64_t> indices,
                        const torch::Tensor& pixels,
                        const torch::Tensor& labels);

}  // namespace shard::trainer

#endif  // TRAINER_IMAGE_DATASETS_H_
