// Bearer-token authentication for shardd (--auth-token-file).
//
// Every RPC except the gRPC health service must carry the metadata
// `authorization: Bearer <token>`. The expected token is kept only as its
// SHA-256 digest; a presented token is hashed and the digests compared with
// CRYPTO_memcmp, so the comparison time depends on neither the token's
// content nor its length. Error messages never contain either token.
// Thread-safety: immutable after construction; Check() is thread-safe.
#ifndef SERVER_SECURITY_BEARER_TOKEN_H_
#define SERVER_SECURITY_BEARER_TOKEN_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shard::security {

using TokenDigest = std::array<uint8_t, 32>;

// The SHA-256 digest of the token a call presents: `authorization` must be
// "Bearer <token>"; UNAUTHENTICATED when it is missing or anything else.
absl::StatusOr<TokenDigest> PresentedTokenDigest(
    std::optional<absl::string_view> authorization);

class BearerToken {
 public:
  // The token of ReadTokenFile (secret_files.h), with its errors, which
  // name the flag `what` ("--admin-token-file").
  static absl::StatusOr<BearerToken> FromFile(const std::string& path,
                                              absl::string_view what);
  // A token given directly (tests); ValidateToken's rules.
  static absl::StatusOr<BearerToken> FromString(absl::string_view token);

  // OK when `authorization` is exactly "Bearer <token>"; UNAUTHENTICATED
  // when it is missing or anything else.
  absl::Status Check(std::optional<absl::string_view> authorization) const;

 private:
  explicit BearerToken(const TokenDigest& digest) : digest_(digest) {}

  TokenDigest digest_;
};

}  // namespace shard::security

#endif  // SERVER_SECURITY_BEARER_TOKEN_H_
