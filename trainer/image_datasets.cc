#include "trainer/image_datasets.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "torch/torch.h"

namespace shard::trainer {

IndexedExample ImageExample(int64_t index, uint8_t label, const uint8_t* pixels,
                            uint32_t rows, uint32_t cols) {
  IndexedExample example;
  example.index = index;
  example.features = torch::empty({1, rows, cols}, torch::kFloat32);
  float* x = example.features.data_ptr<float>();
  for (uint64_t i = 0; i < uint64_t{rows} * cols; ++i) {
    x[i] = static_cast<float>(pixels[i]) / 255.0f;
  }
  example.target = torch::tensor(static_cast<int64_t>(label), torch::kInt64);
  return example;
}

InMemoryImages::InMemoryImages(std::shared_ptr<const data::ImageSplit> split,
                               uint64_t size)
    : split_(std::move(split)), size_(size == 0 ? split_->size() : size) {}

IndexedExample InMemoryImages::get(size_t index) {
  if (index >= size_) {
    throw std::out_of_range(
        absl::StrCat("image ", index, " of a dataset of ", size_));
  }
  const uint64_t pixels = uint64_t{split_->rows} * split_->cols;
  return ImageExample(static_cast<int64_t>(index), split_->labels[index],
                      split_->pixels.data() + index * pixels, split_->rows,
                      split_->cols);
}

RecordImages::RecordImages(std::shared_ptr<const data::RecordSet> records,
                           uint64_t size)
    : records_(std::move(records)),
      size_(size == 0 ? records_->size() : size) {}

IndexedExample RecordImages::get(size_t index) {
  if (index >= size_) {
    throw std::out_of_range(
        absl::StrCat("record ", index, " of a dataset of ", size_));
  }
  // One buffer per loading thread, not an allocation per sample.
  thread_local std::vector<uint8_t> record;
  record.resize(records_->record_size());
  if (absl::Status s = records_->Read(index, absl::MakeSpan(record)); !s.ok()) {
    throw std::runtime_error(std::string(s.message()));
  }
  return ImageExample(static_cast<int64_t>(index), record[0], record.data() + 1,
                      records_->rows(), records_->cols());
}

}  // namespace shard::trainer
