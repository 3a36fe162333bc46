// Image-classification datasets for shard-train: examples are
// features [1, rows, cols] (float, pixels / 255) and an int64 class label.
//   InMemoryImages  a split read into memory (Fashion-MNIST idx files);
//   RecordImages    image records read by index from record files (only the
//                   records of the requested indices are read).
// Both are thread-safe for get(); errors reading a record are thrown as
// std::runtime_error (the libtorch boundary), naming the file and offset.
#ifndef TRAINER_IMAGE_DATASETS_H_
#define TRAINER_IMAGE_DATASETS_H_

#include <cstdint>
#include <memory>

#include "trainer/data/idx_file.h"
#include "trainer/data/record_file.h"
#include "trainer/synthetic_dataset.h"

namespace shard::trainer {

class InMemoryImages : public IndexedDataset {
 public:
  // The first `size` examples of `split` (all when size is 0).
  InMemoryImages(std::shared_ptr<const data::ImageSplit> split, uint64_t size);
  IndexedExample get(size_t index) override;
  torch::optional<size_t> size() const override { return size_; }

 private:
  std::shared_ptr<const data::ImageSplit> split_;
  uint64_t size_;
};

class RecordImages : public IndexedDataset {
 public:
  // The first `size` records of `records` (all when size is 0); the records
  // must be image records (rows, cols > 0).
  RecordImages(std::shared_ptr<const data::RecordSet> records, uint64_t size);
  IndexedExample get(size_t index) override;
  torch::optional<size_t> size() const override { return size_; }

 private:
  std::shared_ptr<const data::RecordSet> records_;
  uint64_t size_;
};

// Example `index` from a label byte and rows * cols pixels.
IndexedExample ImageExample(int64_t index, uint8_t label, const uint8_t* pixels,
                            uint32_t rows, uint32_t cols);

}  // namespace shard::trainer

#endif  // TRAINER_IMAGE_DATASETS_H_
