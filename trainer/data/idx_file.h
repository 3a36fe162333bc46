// The idx format of (Fashion-)MNIST: a magic number (0x0000 + element type
// 0x08 for unsigned bytes + the number of dimensions), the dimensions as
// big-endian u32, then the elements. Files may be gzipped (read through
// zlib, which reads uncompressed files as they are).
#ifndef TRAINER_DATA_IDX_FILE_H_
#define TRAINER_DATA_IDX_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace shard::trainer::data {

struct IdxArray {
  std::vector<uint32_t> dims;   // e.g. {60000, 28, 28}
  std::vector<uint8_t> values;  // product(dims) bytes, row-major
};

// Reads an idx file of unsigned bytes. NOT_FOUND when it does not exist;
// DATA_LOSS naming the file and the (uncompressed) offset when it is not an
// idx file of bytes or ends early.
absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path);

// Fashion-MNIST (or MNIST) split from the directory of the four idx files
// ("train-images-idx3-ubyte[.gz]", "train-labels-...", "t10k-...").
struct ImageSplit {
  uint32_t rows = 0;
  uint32_t cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols
  std::vector<uint8_t> labels;  // count
  uint64_t size() const { return labels.size(); }
};

// split: "train" or "test". FAILED_PRECONDITION when images and labels
// disagree on the count.
absl::StatusOr<ImageSplit> ReadFashionMnist(const std::string& dir,
                                            const std::string& split);

// Where Debian's dataset-fashion-mnist package puts the files.
inline constexpr char kDefaultFashionMnistDir[] =
    "/usr/share/datasets/fashion-mnist";

}  // namespace shard::trainer::data

#endif  // TRAINER_DATA_IDX_FILE_H_
