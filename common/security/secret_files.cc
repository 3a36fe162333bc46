#include "common/security/secret_files.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace shard::security {
namespace {

constexpr size_t kMaxTokenBytes = 4096;

absl::StatusOr<std::string> ReadWholeFile(const std::string& path,
                                          absl::string_view what) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": cannot read ", path));
  }
  std::ostringstream content;
  content << file.rdbuf();
  return content.str();
}

}  // namespace

absl::Status ValidateToken(absl::string_view token) {
  if (token.empty()) return absl::InvalidArgumentError("the token is empty");
  if (token.size() > kMaxTokenBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the token is longer than ", kMaxTokenBytes, " bytes"));
  }
  for (char c : token) {
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(
          "the token must be printable ASCII without spaces");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  absl::StatusOr<std::string> content =
      ReadWholeFile(path, "--auth-token-file");
  if (!content.ok()) return content.status();
  std::string token(absl::StripAsciiWhitespace(*content));
  if (absl::Status s = ValidateToken(token); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--auth-token-file ", path, ": ", s.message()));
  }
  return token;
}

absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        absl::string_view what) {
  absl::StatusOr<std::string> content = ReadWholeFile(path, what);
  if (!content.ok()) return content.status();
  if (content->find("-----BEGIN") == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": ", path, " holds no PEM block"));
  }
  return content;
}

}  // namespace shard::security
