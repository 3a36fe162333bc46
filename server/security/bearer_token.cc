#include "server/security/bearer_token.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "absl/strings/match.h"
#include "common/security/secret_files.h"

namespace shard::security {
namespace {

constexpr absl::string_view kScheme = "Bearer ";

std::array<uint8_t, 32> Sha256(absl::string_view text) {
  std::array<uint8_t, 32> digest;
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(),
         digest.data());
  return digest;
}

}  // namespace

absl::StatusOr<BearerToken> BearerToken::FromFile(const std::string& path,
                                                  absl::string_view what) {
  absl::StatusOr<std::string> token = ReadTokenFile(path, what);
  if (!token.ok()) return token.status();
  return BearerToken(Sha256(*token));
}

absl::StatusOr<BearerToken> BearerToken::FromString(absl::string_view token) {
  if (absl::Status s = ValidateToken(token); !s.ok()) return s;
  return BearerToken(Sha256(token));
}

absl::Status BearerToken::Check(
    std::optional<absl::string_view> authorization) const {
  if (!authorization.has_value()) {
    return absl::UnauthenticatedError(
        "missing \"authorization: Bearer <token>\" metadata");
  }
  if (!absl::StartsWith(*authorization, kScheme)) {
    return absl::UnauthenticatedError(
        "the authorization metadata is not a Bearer token");
  }
  const Digest presented = Sha256(authorization->substr(kScheme.size()));
  if (CRYPTO_memcmp(presented.data(), digest_.data(), digest_.size()) != 0) {
    return absl::UnauthenticatedError("invalid bearer token");
  }
  return absl::OkStatus();
}

}  // namespace shard::security
