#include "server/security/bearer_token.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "absl/strings/match.h"
#include "common/security/secret_files.h"

namespace shard::security {
namespace {

constexpr absl::string_view kScheme = "Bearer ";

TokenDigest Sha256(absl::string_view text) {
  TokenDigest digest;
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

absl::StatusOr<TokenDigest> PresentedTokenDigest(
    std::optional<absl::string_view> authorization) {
  if (!authorization.has_value()) {
    return absl::UnauthenticatedError(
        "missing \"authorization: Bearer <token>\" metadata");
  }
  if (!absl::StartsWith(*authorization, kScheme)) {
    return absl::UnauthenticatedError(
        "the authorization metadata is not a Bearer token");
  }
  return Sha256(authorization->substr(kScheme.size()));
}

absl::Status BearerToken::Check(
    std::optional<absl::string_view> authorization) const {
  absl::StatusOr<TokenDigest> presented = PresentedTokenDigest(authorization);
  if (!presented.ok()) return presented.status();
  if (CRYPTO_memcmp(presented->data(), digest_.data(), digest_.size()) != 0) {
    return absl::UnauthenticatedError("invalid bearer token");
  }
  return absl::OkStatus();
}

}  // namespace shard::security
