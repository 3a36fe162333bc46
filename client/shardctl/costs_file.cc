#include "client/shardctl/costs_file.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace shard::shardctl {
namespace {

constexpr absl::string_view kNpyMagic("\x93NUMPY", 6);

uint64_t ReadLittleEndian(const char* at, int width) {
  uint64_t value = 0;
  for (int b = width - 1; b >= 0; --b) {
    value = value << 8 | static_cast<unsigned char>(at[b]);
  }
  return value;
}

// The values of `data` (little-endian, `width` bytes each) as u32.
absl::StatusOr<std::string> ToLe32(const std::string& path,
                                   absl::string_view data, int width) {
  if (data.empty() || data.size() % width != 0) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", data.size(),
                                                   " bytes of costs are not a "
                                                   "positive number of ",
                                                   width, "-byte values"));
  }
  std::string le32(data.size() / width * 4, '\0');
  for (size_t i = 0; i < data.size() / width; ++i) {
    const uint64_t value = ReadLittleEndian(data.data() + i * width, width);
    if (value > UINT32_MAX) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": cost ", value, " of sample ", i, " is above 2^32 - 1"));
    }
    for (int b = 0; b < 4; ++b) le32[4 * i + b] = char(value >> (8 * b));
  }
  return le32;
}

// The .npy header's value for `key` ("'descr': '<u4'" gives "'<u4'"; a
// tuple is taken whole: "'shape': (3, 4)" gives "(3, 4)").
absl::string_view HeaderValue(absl::string_view header, absl::string_view key) {
  const size_t at = header.find(absl::StrCat("'", key, "'"));
  if (at == header.npos) return "";
  const size_t colon = header.find(':', at);
  if (colon == header.npos) return "";
  const size_t open = header.find_first_not_of(' ', colon + 1);
  const size_t end = open != header.npos && header[open] == '('
                         ? header.find(')', open) + 1
                         : header.find_first_of(",}", colon);
  absl::string_view value = header.substr(colon + 1, end - colon - 1);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  return value;
}

// The length of a 1-d shape "(N,)"; 0 for any other shape (a scalar "()",
// "(2, 1000)", a length that is not a decimal number).
uint64_t OneDimensionalLength(absl::string_view shape) {
  if (!absl::ConsumePrefix(&shape, "(") || !absl::ConsumeSuffix(&shape, ")")) {
    return 0;
  }
  shape = absl::StripAsciiWhitespace(shape);
  if (!absl::ConsumeSuffix(&shape, ",")) return 0;
  uint64_t length = 0;
  for (char c : absl::StripAsciiWhitespace(shape)) {
    if (c < '0' || c > '9' || length > UINT64_MAX / 10 - 9) return 0;
    length = length * 10 + (c - '0');
  }
  return length;
}

absl::StatusOr<std::string> FromNpy(const std::string& path,
                                    absl::string_view file) {
  const auto malformed = [&path](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a .npy file shardctl reads (", why,
                     "); write costs with numpy.save of a 1-D unsigned "
                     "integer array"));
  };
  if (file.size() < 10) return malformed("too short");
  const int version = static_cast<unsigned char>(file[6]);
  const size_t length_bytes = version == 1 ? 2 : 4;
  const size_t header_length = ReadLittleEndian(file.data() + 8, length_bytes);
  const size_t data_at = 8 + length_bytes + header_length;
  if (data_at > file.size()) return malformed("header past the end");
  const absl::string_view header = file.substr(8 + length_bytes, header_length);
  const absl::string_view descr = HeaderValue(header, "descr");
  if (HeaderValue(header, "fortran_order") != "False") {
    return malformed("Fortran order");
  }
  const absl::string_view shape = HeaderValue(header, "shape");
  const uint64_t length = OneDimensionalLength(shape);
  if (length == 0) {
    return malformed(
        absl::StrCat("shape ", shape.empty() ? "missing" : shape,
                     "; need a 1-D array of at least one cost, (N,)"));
  }
  int width = 0;
  for (const auto& [name, bytes] :
       {std::pair<absl::string_view, int>{"'|u1'", 1},
        {"'<u2'", 2},
        {"'<u4'", 4},
        {"'<u8'", 8}}) {
    if (descr == name) width = bytes;
  }
  if (width == 0) {
    return malformed(
        absl::StrCat("dtype ", descr, "; need <u2, <u4, <u8 or |u1"));
  }
  const absl::string_view data = file.substr(data_at);
  if (data.size() / width != length || data.size() % width != 0) {
    return malformed(absl::StrCat("its shape ", shape, " needs ",
                                  length * width,
                                  " bytes of data, the file "
                                  "has ",
                                  data.size(), ": truncated or damaged"));
  }
  return ToLe32(path, data, width);
}

}  // namespace

absl::StatusOr<std::string> ReadCostsFile(const std::string& path,
                                          absl::string_view format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int error = errno;
    return absl::Status(error == EACCES ? absl::StatusCode::kPermissionDenied
                                        : absl::StatusCode::kNotFound,
                        absl::StrCat("cannot open costs file ", path, ": ",
                                     std::strerror(error)));
  }
  const std::string file((std::istreambuf_iterator<char>(in)),
                         std::istreambuf_iterator<char>());
  const bool npy = absl::StartsWith(file, kNpyMagic);
  if (format == "npy" || (format == "auto" && npy)) return FromNpy(path, file);
  if (format == "u16") return ToLe32(path, file, 2);
  if (format == "u32") return ToLe32(path, file, 4);
  return absl::InvalidArgumentError(absl::StrCat(
      path,
      " is not a .npy file: give --costs-format u16 or u32 for raw "
      "little-endian values"));
}

absl::StatusOr<std::string> ReadDatasetCosts(
    const std::vector<std::string>& paths, absl::string_view format,
    const shard::v1::JobSpec& spec) {
  if (paths.size() == 1) return ReadCostsFile(paths[0], format);
  if (static_cast<int>(paths.size()) != spec.sources_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "give --costs once (the whole dataset's) or, for a mixture, once "
        "per --source in its order: got ",
        paths.size(), " for ", spec.sources_size(), " sources"));
  }
  std::string le32;
  for (int k = 0; k < spec.sources_size(); ++k) {
    absl::StatusOr<std::string> part = ReadCostsFile(paths[k], format);
    if (!part.ok()) return part.status();
    const shard::v1::Source& source = spec.sources(k);
    if (part->size() / 4 != source.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          paths[k], " holds ", part->size() / 4, " costs but source ",
          source.name(), " has ", source.size(), " samples"));
    }
    le32 += *part;
  }
  return le32;
}

}  // namespace shard::shardctl
