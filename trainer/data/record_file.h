// Record files: a dataset of fixed-size records, read by index with pread.
//
// A dataset is one file or several shard files ("part-00000-of-00004.rec"
// in a directory), each covering a contiguous range of global indices.
// Layout of one file (all integers little-endian):
//
//   header, 64 bytes:
//      0  magic "SHRDREC1"
//      8  u32 format version (1)
//     12  u32 record_size: payload bytes per record (1 .. 16 MiB)
//     16  u64 record_count: records in this file
//     24  u64 first_index: global index of this file's first record
//     32  u64 total_records: records in the whole dataset
//     40  u32 rows, 44 u32 cols: image records (payload = 1 label byte, then
//         rows * cols pixels, row-major); 0 and 0 for opaque records
//     48  u32 shard_index, 52 u32 shard_count
//     56  u32 reserved (0)
//     60  u32 CRC-32 (zlib) of bytes 0..59
//   then record_count records, each: payload (record_size bytes), then the
//   u32 CRC-32 of the payload.
//
// The file's size is exactly 64 + record_count * (record_size + 4). Every
// read checks the record's CRC; errors name the file and the byte offset
// (DATA_LOSS for damage, NOT_FOUND for a missing file, OUT_OF_RANGE for an
// index past the end). Readers are thread-safe (pread on a shared fd).
#ifndef TRAINER_DATA_RECORD_FILE_H_
#define TRAINER_DATA_RECORD_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace shard::trainer::data {

inline constexpr uint32_t kRecordFormatVersion = 1;
inline constexpr uint64_t kRecordHeaderBytes = 64;
inline constexpr uint32_t kMaxRecordSize = 16u << 20;

struct RecordHeader {
  uint32_t record_size = 0;
  uint64_t record_count = 0;
  uint64_t first_index = 0;
  uint64_t total_records = 0;
  uint32_t rows = 0;
  uint32_t cols = 0;
  uint32_t shard_index = 0;
  uint32_t shard_count = 1;
};

// Bytes a file with this header occupies.
uint64_t RecordFileBytes(const RecordHeader& header);

// One open record file. Movable, not copyable; closes its fd.
class RecordFile {
 public:
  // Opens and validates the header and the file size.
  static absl::StatusOr<RecordFile> Open(const std::string& path);
  RecordFile(RecordFile&& other) noexcept;
  RecordFile& operator=(RecordFile&& other) noexcept;
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;
  ~RecordFile();

  const RecordHeader& header() const { return header_; }
  const std::string& path() const { return path_; }
  // Reads the payload of record `local_index` (of this file) into `out`
  // (exactly record_size bytes) and checks its CRC.
  absl::Status Read(uint64_t local_index, absl::Span<uint8_t> out) const;

 private:
  RecordFile(std::string path, int fd, RecordHeader header)
      : path_(std::move(path)), fd_(fd), header_(header) {}
  std::string path_;
  int fd_ = -1;
  RecordHeader header_;
};

// A whole dataset: one record file, or every "*.rec" file of a directory.
// The files must agree on record_size, rows, cols and total_records and
// cover 0 .. total_records - 1 exactly once.
class RecordSet {
 public:
  static absl::StatusOr<RecordSet> Open(const std::string& path);
  // The sets one after another, as the sources of a mixture are numbered:
  // record j of sets[k] is record (size of sets[0..k-1]) + j. The sets
  // must agree on record_size, rows and cols (FAILED_PRECONDITION naming
  // the first file that differs); INVALID_ARGUMENT when `sets` is empty.
  static absl::StatusOr<RecordSet> Concat(std::vector<RecordSet> sets);

  uint64_t size() const { return total_records_; }
  uint32_t record_size() const { return files_.front().header().record_size; }
  uint32_t rows() const { return files_.front().header().rows; }
  uint32_t cols() const { return files_.front().header().cols; }
  const std::vector<RecordFile>& files() const { return files_; }
  // Reads global record `index` into `out` (record_size bytes).
  absl::Status Read(uint64_t index, absl::Span<uint8_t> out) const;

 private:
  RecordSet(std::vector<RecordFile> files, std::vector<uint64_t> starts);
  std::vector<RecordFile> files_;  // in the order of their records
  std::vector<uint64_t> starts_;   // the set's index of each file's first
  uint64_t total_records_ = 0;
};

// Writes one record file: to "<path>.partial", renamed to `path` by
// Finish() after an fsync. Not thread-safe. Destroying an unfinished
// writer removes the partial file.
class RecordWriter {
 public:
  // header.record_count is the number of records that will be appended.
  static absl::StatusOr<std::unique_ptr<RecordWriter>> Create(
      const std::string& path, const RecordHeader& header);
  ~RecordWriter();

  // Appends one payload of exactly record_size bytes.
  absl::Status Append(absl::Span<const uint8_t> payload);
  // FAILED_PRECONDITION unless exactly record_count records were appended.
  absl::Status Finish();

 private:
  RecordWriter(std::string path, int fd, RecordHeader header)
      : path_(std::move(path)), fd_(fd), header_(header) {}
  absl::Status Flush();
  std::string path_;
  int fd_;
  RecordHeader header_;
  uint64_t appended_ = 0;
  std::vector<uint8_t> buffer_;
  bool finished_ = false;
};

// The name of shard `index` of `count` inside a dataset directory.
std::string RecordShardName(uint32_t index, uint32_t count);

}  // namespace shard::trainer::data

#endif  // TRAINER_DATA_RECORD_FILE_H_
