// Journal record framing: fixed32 length | fixed32 CRC-32 of the payload |
// payload (little endian). Payloads are never empty.
//
// A reader tells a torn tail from corruption. A torn tail is what a crash
// during the last append leaves: an incomplete record (a partial header, or
// a length running past the end of the data) after which nothing valid
// follows, or a zero-filled tail (space the file system allocated but never
// wrote). Everything else that fails is corruption and is refused with
// DATA_LOSS and the byte offset, never skipped: a record whose header is
// implausible, a complete record that fails its checksum (also the last
// one: it was written whole, so it was acknowledged), a length that runs
// past the end while a valid record lies after it, or one whose remaining
// bytes would pass the checksum (a damaged length on an intact record).
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
  // Byte offset of each payload's record.
  std::vector<uint64_t> offsets;
  // Bytes up to the end of the last good record.
  uint64_t valid_bytes = 0;
  // True when bytes after valid_bytes were a torn last record.
  bool torn_tail = false;
};

// Decodes every record of `data`. DATA_LOSS (with the offset) for
// corruption as defined above.
absl::StatusOr<DecodedRecords> DecodeRecords(absl::string_view data);

}  // namespace shard::storage

#endif  // SERVER_STORAGE_RECORD_CODEC_H_
