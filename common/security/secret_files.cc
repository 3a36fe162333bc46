#include "common/security/secret_files.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

absl::Status CheckSecretFileMode(const std::string& path,
                                 absl::string_view what) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": cannot read ", path));
  }
  if ((info.st_mode & S_IRWXO) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s is a secret but others may read it (mode %04o); allow its "
        "owner and group only (chmod 600 or 640)",
        what, path, info.st_mode & 07777));
  }
  return absl::OkStatus();
}

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

absl::StatusOr<std::string> ReadTokenFile(const std::string& path,
                                          absl::string_view what) {
  if (absl::Status s = CheckSecretFileMode(path, what); !s.ok()) return s;
  absl::StatusOr<std::string> content = ReadWholeFile(path, what);
  if (!content.ok()) return content.status();
  std::string token(absl::StripAsciiWhitespace(*content));
  if (absl::Status s = ValidateToken(token); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " ", path, ": ", s.message()));
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

absl::StatusOr<std::string> ReadPrivateKeyFile(const std::string& path,
                                               absl::string_view what) {
  if (absl::Status s = CheckSecretFileMode(path, what); !s.ok()) return s;
  return ReadPemFile(path, what);
}

}  // namespace shard::security
