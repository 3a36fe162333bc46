// Reading the secrets shardd and its clients are configured with: bearer
// token files and PEM files (certificates, keys, CA bundles). Errors name the
// file and never include its content. Stateless; thread-safe.
#ifndef COMMON_SECURITY_SECRET_FILES_H_
#define COMMON_SECURITY_SECRET_FILES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shard::security {

// The token is the file's content without surrounding whitespace (a
// Kubernetes Secret mounted as a file often ends in a newline).
// INVALID_ARGUMENT if unreadable or if ValidateToken fails.
absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// A token travels in an HTTP/2 header: 1..4096 printable ASCII characters
// without spaces.
absl::Status ValidateToken(absl::string_view token);

// The whole file; INVALID_ARGUMENT if unreadable or without a PEM block
// ("-----BEGIN"). `what` names the flag in the error ("--tls-cert").
absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        absl::string_view what);

}  // namespace shard::security

#endif  // COMMON_SECURITY_SECRET_FILES_H_
