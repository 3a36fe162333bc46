// Where a coordinator keeps the per-sample costs of balanced-batch jobs
// durably, each set named by its SHA-256 (CostStore stages, checks and
// serves them; this only stores bytes): files under --data-dir
// (FileCostBlobs) or keys in etcd for replicated coordinators
// (replication/EtcdCostBlobs).
//
// Contract for implementations: Write is durable before it returns OK and
// all-or-nothing for readers (a Read never returns part of a set); writing
// a name again with the same bytes is OK. Thread-safe; calls block on I/O.
#ifndef SERVER_STORAGE_COST_BLOBS_H_
#define SERVER_STORAGE_COST_BLOBS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shard::storage {

class CostBlobs {
 public:
  virtual ~CostBlobs() = default;

  // Stores `le32` (the costs as little-endian u32 values) as `sha256`.
  virtual absl::Status Write(const std::string& sha256,
                             const std::string& le32) = 0;
  // The bytes stored as `sha256`; NOT_FOUND when there are none.
  virtual absl::StatusOr<std::string> Read(const std::string& sha256) = 0;
  // Every name stored.
  virtual absl::StatusOr<std::vector<std::string>> Names() = 0;
  // Removes what is stored as `sha256` (OK when there is nothing).
  virtual absl::Status Remove(const std::string& sha256) = 0;
  // Where `sha256` is kept, for messages (a path, an etcd key).
  virtual std::string Where(const std::string& sha256) const = 0;
};

}  // namespace shard::storage

#endif  // SERVER_STORAGE_COST_BLOBS_H_
