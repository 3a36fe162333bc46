// The name of a job's costs (balanced batches): the SHA-256 of the costs as
// little-endian u32 values. Pure; thread-safe.
#ifndef COMMON_PLAN_BATCHES_COST_DIGEST_H_
#define COMMON_PLAN_BATCHES_COST_DIGEST_H_

#include <string>

#include "absl/strings/string_view.h"

namespace shard::plan {

// SHA-256 of `bytes` as 64 lowercase hex digits.
std::string Sha256Hex(absl::string_view bytes);

}  // namespace shard::plan

#endif  // COMMON_PLAN_BATCHES_COST_DIGEST_H_
