#include "server/storage/record_codec.h"

#include <zlib.h>

#include <algorithm>

#include "absl/base/internal/endian.h"
#include "absl/strings/str_cat.h"

namespace shard::storage {
namespace {

uint32_t Crc32(absl::string_view data) {
  return static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(data.data()),
            static_cast<uInt>(data.size())));
}

struct Header {
  uint32_t length;
  uint32_t crc;
};

Header ReadHeader(absl::string_view at) {
  return {absl::little_endian::Load32(at.data()),
          absl::little_endian::Load32(at.data() + 4)};
}

bool Plausible(const Header& header) {
  return header.length > 0 && header.length <= kMaxRecordBytes;
}

// Whether a complete record with a plausible header and a matching checksum
// starts at the beginning of `data`.
bool ValidRecordAt(absl::string_view data) {
  if (data.size() < kRecordHeaderBytes) return false;
  const Header header = ReadHeader(data);
  return Plausible(header) &&
         kRecordHeaderBytes + header.length <= data.size() &&
         Crc32(data.substr(kRecordHeaderBytes, header.length)) == header.crc;
}

// Offset (within `data`) of the first valid record starting after its first
// byte, or npos.
size_t NextValidRecord(absl::string_view data) {
  for (size_t at = 1; at + kRecordHeaderBytes <= data.size(); ++at) {
    if (ValidRecordAt(data.substr(at))) return at;
  }
  return absl::string_view::npos;
}

// Why the record at the start of `rest` (which is not valid) is corruption
// rather than a torn tail, or an empty string for a torn tail.
std::string Corruption(absl::string_view rest) {
  if (std::all_of(rest.begin(), rest.end(), [](char c) { return c == 0; })) {
    return "";  // Zero-filled: allocated, never written.
  }
  if (rest.size() < kRecordHeaderBytes) {
    return "";  // A partial header at the end.
  }
  const Header header = ReadHeader(rest);
  const bool complete =
      Plausible(header) && kRecordHeaderBytes + header.length <= rest.size();
  if (complete) {
    return absl::StrCat("its ", header.length,
                        "-byte payload fails its checksum");
  }
  if (Crc32(rest.substr(kRecordHeaderBytes)) == header.crc) {
    return absl::StrCat("its header claims ", header.length, " bytes but the ",
                        rest.size() - kRecordHeaderBytes,
                        " bytes after it pass its checksum (a damaged length)");
  }
  if (size_t next = NextValidRecord(rest); next != absl::string_view::npos) {
    return absl::StrCat(
        Plausible(header)
            ? "its length runs past the end of the file"
            : absl::StrCat("its length ", header.length, " is implausible"),
        " but a valid record follows ", next, " bytes later");
  }
  return "";  // An incomplete last write.
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
    if (ValidRecordAt(rest)) {
      const uint32_t length = ReadHeader(rest).length;
      decoded.payloads.emplace_back(rest.substr(kRecordHeaderBytes, length));
      decoded.offsets.push_back(offset);
      offset += kRecordHeaderBytes + length;
      decoded.valid_bytes = offset;
      continue;
    }
    if (std::string why = Corruption(rest); !why.empty()) {
      return absl::DataLossError(
          absl::StrCat("record ", decoded.payloads.size() + 1,
                       " at byte offset ", offset, " is corrupt: ", why));
    }
    decoded.torn_tail = true;
    break;
  }
  return decoded;
}

}  // namespace shard::storage
