// Journal record framing: fixed32 length | fixed32 CRC-32 of the payload |
// payload (little endian). A reader tells a torn tail (the last record is
// incomplete or fails its checksum and nothing follows it: a crash during
// the write) from corruption in the middle (a bad record followed by more
// data), which must not be skipped silently.
#ifndef SERVER_STORAGE_RECORD_CODEC_H_
#define SERVER_STORAGE_RECORD_CODEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shard::storage {

inline constexpr size_t kRecordHeaderBytes = 8;
// Larger lengths are treated as corruption.
inline constexpr uint32_t kMaxRecordBytes = 64u << 20;

std::string EncodeRecord(absl::string_view payload);

struct DecodedRecords {
  std::vector<std::string> payloads;
  // Bytes up to the end of the last good record.
  uint64_t valid_bytes = 0;
  // True when bytes after valid_bytes were a torn last record.
  bool torn_tail = false;
};

// Decodes every record of `data`. DATA_LOSS (with the offset) when a bad
// record is followed by more data.
absl::StatusOr<DecodedRecords> DecodeRecords(absl::string_view data);

}  // namespace shard::storage

#endif  // SERVER_STORAGE_RECORD_CODEC_H_
