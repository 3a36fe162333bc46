#include "trainer/image_datasets.h"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "torch/torch.h"

namespace shard::trainer {
namespace {

// A uint8 tensor viewing bytes that the caller keeps alive and never
// writes through it.
torch::Tensor ByteView(const std::vector<uint8_t>& bytes,
                       torch::IntArrayRef shape) {
  return torch::from_blob(const_cast<uint8_t*>(bytes.data()), shape,
                          torch::kUInt8);
}

}  // namespace

ExampleBatch ImageBatch(std::vector<int64_t> indices,
                        const torch::Tensor& pixels,
                        const torch::Tensor& labels) {
  ExampleBatch batch;
  // pixels / 255 in float, as each sample was converted before: the same
  // bits as x / 255.0f.
  batch.features = pixels.to(torch::kFloat32).div_(255.0f);
  batch.targets = labels.to(torch::kInt64);
  batch.indices = std::move(indices);
  return batch;
}

InMemoryImages::InMemoryImages(std::shared_ptr<const data::ImageSplit> split,
                               uint64_t size)
    : split_(std::move(split)), size_(size == 0 ? split_->size() : size) {
  const int64_t count = static_cast<int64_t>(split_->size());
  pixels_ = ByteView(split_->pixels, {count, 1, split_->rows, split_->cols});
  labels_ = ByteView(split_->labels, {count});
}

ExampleBatch InMemoryImages::get_batch(c10::ArrayRef<size_t> indices) {
  std::vector<int64_t> rows = CheckedIndices(indices, size_, "image");
  const torch::Tensor at = torch::from_blob(
      rows.data(), {static_cast<int64_t>(rows.size())}, torch::kInt64);
  torch::Tensor pixels = pixels_.index_select(0, at);
  torch::Tensor labels = labels_.index_select(0, at);
  return ImageBatch(std::move(rows), pixels, labels);
}

RecordImages::RecordImages(std::shared_ptr<const data::RecordSet> records,
                           uint64_t size)
    : records_(std::move(records)),
      size_(size == 0 ? records_->size() : size) {}

ExampleBatch RecordImages::get_batch(c10::ArrayRef<size_t> indices) {
  std::vector<int64_t> rows = CheckedIndices(indices, size_, "record");
  const int64_t count = static_cast<int64_t>(rows.size());
  const int64_t record_size = records_->record_size();
  // Each record: one label byte, then rows * cols pixels.
  torch::Tensor records = torch::empty({count, record_size}, torch::kUInt8);
  uint8_t* out = records.data_ptr<uint8_t>();
  for (int64_t row = 0; row < count; ++row, out += record_size) {
    if (absl::Status s =
            records_->Read(rows[row], absl::MakeSpan(out, record_size));
        !s.ok()) {
      throw std::runtime_error(std::string(s.message()));
    }
  }
  const torch::Tensor pixels =
      records.narrow(1, 1, record_size - 1)
          .reshape({count, 1, records_->rows(), records_->cols()});
  return ImageBatch(std::move(rows), pixels, records.select(1, 0));
}

}  // namespace shard::trainer
