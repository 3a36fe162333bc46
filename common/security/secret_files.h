// Reading the secrets shardd and its clients are configured with: bearer
// token files and PEM files (certificates, keys, CA bundles). Errors name the
// file and never include its content. Stateless; thread-safe.
//
// One rule for secret files (bearer tokens and private keys), in every
// program and in the Python client: a file that others may read (any
// permission bit for "other") is refused; owner- and group-readable files
// (0600, 0640, 0440) are accepted, because Kubernetes mounts Secrets
// group-readable for the pod's fsGroup. The mode is the one of the file
// reached through symlinks (a Secret volume's files are symlinks into its
// ..data directory). Certificates and CA bundles are public and may have
// any mode.
#ifndef COMMON_SECURITY_SECRET_FILES_H_
#define COMMON_SECURITY_SECRET_FILES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace shard::security {

// INVALID_ARGUMENT naming the file and its mode if others may read it (see
// the file comment); `what` names the flag ("--tls-key").
absl::Status CheckSecretFileMode(const std::string& path,
                                 absl::string_view what);

// The token is the file's content without surrounding whitespace (a
// Kubernetes Secret mounted as a file often ends in a newline).
// INVALID_ARGUMENT if unreadable, readable by others (CheckSecretFileMode)
// or if ValidateToken fails. `what` names the flag in the error
// ("--admin-token-file").
absl::StatusOr<std::string> ReadTokenFile(const std::string& path,
                                          absl::string_view what);

// A token travels in an HTTP/2 header: 1..4096 printable ASCII characters
// without spaces.
absl::Status ValidateToken(absl::string_view token);

// The whole file; INVALID_ARGUMENT if unreadable or without a PEM block
// ("-----BEGIN"). `what` names the flag in the error ("--tls-cert").
absl::StatusOr<std::string> ReadPemFile(const std::string& path,
                                        absl::string_view what);

// ReadPemFile of a private key, refused if others may read it
// (CheckSecretFileMode).
absl::StatusOr<std::string> ReadPrivateKeyFile(const std::string& path,
                                               absl::string_view what);

}  // namespace shard::security

#endif  // COMMON_SECURITY_SECRET_FILES_H_
