// CostBlobs as files: <dir>/<sha256>.u32, written atomically (temporary
// file, fsync, rename, fsync of the directory).
//
// Thread-safe as the FileSystem is.
#ifndef SERVER_STORAGE_FILE_COST_BLOBS_H_
#define SERVER_STORAGE_FILE_COST_BLOBS_H_

#include <string>
#include <utility>
#include <vector>

#include "common/storage/file_system.h"
#include "server/storage/cost_blobs.h"

namespace shard::storage {

class FileCostBlobs : public CostBlobs {
 public:
  // `file_system` is not owned and must outlive this; `dir` is created on
  // the first Write.
  FileCostBlobs(FileSystem* file_system, std::string dir)
      : file_system_(file_system), dir_(std::move(dir)) {}

  absl::Status Write(const std::string& sha256,
                     const std::string& le32) override;
  absl::StatusOr<std::string> Read(const std::string& sha256) override;
  absl::StatusOr<std::vector<std::string>> Names() override;
  absl::Status Remove(const std::string& sha256) override;
  std::string Where(const std::string& sha256) const override;

 private:
  FileSystem* const file_system_;
  const std::string dir_;
};

}  // namespace shard::storage

#endif  // SERVER_STORAGE_FILE_COST_BLOBS_H_
