#include "trainer/data/idx_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"

namespace shard::trainer::data {
namespace {

struct GzCloser {
  void operator()(gzFile file) const { gzclose(file); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads exactly `size` bytes at the current (uncompressed) `offset`.
absl::Status ReadExactly(gzFile file, const std::string& path, uint64_t offset,
                         uint8_t* out, uint64_t size) {
  uint64_t done = 0;
  while (done < size) {
    const unsigned chunk =
        static_cast<unsigned>(std::min<uint64_t>(size - done, 1u << 30));
    const int got = gzread(file, out + done, chunk);
    if (got < 0) {
      int code = 0;
      const char* message = gzerror(file, &code);
      return absl::DataLossError(
          absl::StrCat(path, ": offset ", offset + done, ": ", message));
    }
    if (got == 0) {
      return absl::DataLossError(
          absl::StrCat(path, ": offset ", offset + done, ": ends after ",
                       offset + done, " bytes, expected ", offset + size));
    }
    done += static_cast<uint64_t>(got);
  }
  return absl::OkStatus();
}

// "<dir>/<name>.gz" if it exists, else "<dir>/<name>".
std::string Locate(const std::string& dir, const std::string& name) {
  const std::string gz = dir + "/" + name + ".gz";
  std::error_code error;
  return std::filesystem::exists(gz, error) ? gz : dir + "/" + name;
}

}  // namespace

absl::StatusOr<IdxArray> ReadIdxFile(const std::string& path) {
  GzFile file(gzopen(path.c_str(), "rb"));
  if (file == nullptr) {
    const std::string message =
        absl::StrCat(path, ": cannot open: ", std::strerror(errno));
    if (errno == ENOENT) return absl::NotFoundError(message);
    return absl::UnavailableError(message);
  }
  uint8_t magic[4];
  if (absl::Status s = ReadExactly(file.get(), path, 0, magic, 4); !s.ok()) {
    return s;
  }
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] == 0 ||
      magic[3] > 4) {
    return absl::DataLossError(
        absl::StrCat(path, ": offset 0: not an idx file of unsigned bytes"));
  }
  IdxArray array;
  uint64_t count = 1;
  for (int d = 0; d < magic[3]; ++d) {
    uint8_t be[4];
    if (absl::Status s = ReadExactly(file.get(), path, 4 + 4 * d, be, 4);
        !s.ok()) {
      return s;
    }
    const uint32_t dim = (uint32_t{be[0]} << 24) | (uint32_t{be[1]} << 16) |
                         (uint32_t{be[2]} << 8) | be[3];
    array.dims.push_back(dim);
    count *= dim;
  }
  if (count > (uint64_t{1} << 34)) {
    return absl::DataLossError(absl::StrCat(path, ": offset 4: ", count,
                                            " elements is implausibly large"));
  }
  const uint64_t data_offset = 4 + 4 * uint64_t{magic[3]};
  array.values.resize(count);
  if (absl::Status s = ReadExactly(file.get(), path, data_offset,
                                   array.values.data(), count);
      !s.ok()) {
    return s;
  }
  uint8_t extra;
  if (gzread(file.get(), &extra, 1) != 0) {
    return absl::DataLossError(
        absl::StrCat(path, ": offset ", data_offset + count,
                     ": trailing bytes after ", count, " elements"));
  }
  return array;
}

absl::StatusOr<ImageSplit> ReadFashionMnist(const std::string& dir,
                                            const std::string& split) {
  if (split != "train" && split != "test") {
    return absl::InvalidArgumentError(
        absl::StrCat("split must be train or test, got \"", split, "\""));
  }
  const std::string stem = split == "train" ? "train" : "t10k";
  absl::StatusOr<IdxArray> images =
      ReadIdxFile(Locate(dir, stem + "-images-idx3-ubyte"));
  if (!images.ok()) return images.status();
  absl::StatusOr<IdxArray> labels =
      ReadIdxFile(Locate(dir, stem + "-labels-idx1-ubyte"));
  if (!labels.ok()) return labels.status();
  if (images->dims.size() != 3 || labels->dims.size() != 1 ||
      images->dims[0] != labels->dims[0]) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir, ": the ", split, " images and labels do not match (",
                     images->dims.size(), "-d images, ", labels->dims.size(),
                     "-d labels, or different counts)"));
  }
  ImageSplit out;
  out.rows = images->dims[1];
  out.cols = images->dims[2];
  out.pixels = std::move(images->values);
  out.labels = std::move(labels->values);
  return out;
}

}  // namespace shard::trainer::data
