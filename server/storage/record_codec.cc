#include "server/storage/record_codec.h"

#include <zlib.h>

#include "absl/base/internal/endian.h"
#include "absl/strings/str_cat.h"

namespace shard::storage {
namespace {

uint32_t Crc32(absl::string_view data) {
  return static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(data.data()),
            static_cast<uInt>(data.size())));
}

}  // namespace

std::string EncodeRecord(absl::string_view payload) {
  std::string record(kRecordHeaderBytes, '\0');
  absl::little_endian::Store32(record.data(),
                               static_cast<uint32_t>(payload.size()));
  absl::little_endian::Store32(record.data() + 4, Crc32(payload));
  record.append(payload.data(), payload.size());
  return record;
}

absl::StatusOr<DecodedRecords> DecodeRecords(absl::string_view data) {
  DecodedRecords decoded;
  uint64_t offset = 0;
  while (offset < data.size()) {
    const absl::string_view rest = data.substr(offset);
    bool bad = rest.size() < kRecordHeaderBytes;
    uint64_t end = data.size();
    if (!bad) {
      const uint32_t length = absl::little_endian::Load32(rest.data());
      const uint32_t crc = absl::little_endian::Load32(rest.data() + 4);
      if (length > kMaxRecordBytes ||
          kRecordHeaderBytes + length > rest.size()) {
        bad = true;  // Runs past the end: nothing can follow it.
      } else {
        const absl::string_view payload =
            rest.substr(kRecordHeaderBytes, length);
        end = offset + kRecordHeaderBytes + length;
        if (Crc32(payload) == crc) {
          decoded.payloads.emplace_back(payload);
          offset = end;
          decoded.valid_bytes = offset;
          continue;
        }
        bad = true;
      }
    }
    if (end < data.size()) {
      return absl::DataLossError(absl::StrCat(
          "record ", decoded.payloads.size() + 1, " at byte offset ", offset,
          " fails its checksum and ", data.size() - end,
          " bytes follow it: the journal is corrupt in the middle"));
    }
    decoded.torn_tail = true;
    break;
  }
  return decoded;
}

}  // namespace shard::storage
