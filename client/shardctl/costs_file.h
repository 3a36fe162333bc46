// Reading a job's per-sample costs (balanced batches) from a file for
// `shardctl create-job --costs FILE`: NumPy .npy of an unsigned integer
// type (u1, u2, u4, u8; little-endian, one dimension, C order), or raw
// little-endian u16 or u32 values; a mixture's costs, one file per source.
#ifndef CLIENT_SHARDCTL_COSTS_FILE_H_
#define CLIENT_SHARDCTL_COSTS_FILE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "shard/v1/shard.pb.h"

namespace shard::shardctl {

// The costs of `path` as little-endian u32 values (PutCosts' form).
// `format`: "npy", "u16", "u32", or "auto" (npy when the file starts with
// NumPy's magic, else INVALID_ARGUMENT asking for the format). A value
// above 2^32 - 1, an empty file or a malformed .npy header is
// INVALID_ARGUMENT naming the file; an unreadable file NOT_FOUND or
// PERMISSION_DENIED.
absl::StatusOr<std::string> ReadCostsFile(const std::string& path,
                                          absl::string_view format);

// The costs of the dataset of `spec` (a plain job or a mixture, its
// sources with their sizes) from `paths` in `format`: one file for the
// whole dataset, or, for a mixture, one file per source in the sources'
// order, each holding that source's costs, joined in order (the dataset's
// global indices). INVALID_ARGUMENT when a mixture's files are neither
// one nor one per source, or a source's file holds another count than
// its size; each file's errors as ReadCostsFile's.
absl::StatusOr<std::string> ReadDatasetCosts(
    const std::vector<std::string>& paths, absl::string_view format,
    const shard::v1::JobSpec& spec);

}  // namespace shard::shardctl

#endif  // CLIENT_SHARDCTL_COSTS_FILE_H_
