#include "server/storage/file_cost_blobs.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace shard::storage {
namespace {

constexpr absl::string_view kSuffix = ".u32";

}  // namespace

std::string FileCostBlobs::Where(const std::string& sha256) const {
  return absl::StrCat(dir_, "/", sha256, kSuffix);
}

absl::Status FileCostBlobs::Write(const std::string& sha256,
                                  const std::string& le32) {
  if (absl::Status s = file_system_->CreateDir(dir_); !s.ok()) return s;
  return file_system_->WriteFileAtomically(Where(sha256), le32);
}

absl::StatusOr<std::string> FileCostBlobs::Read(const std::string& sha256) {
  return file_system_->ReadFile(Where(sha256));
}

absl::StatusOr<std::vector<std::string>> FileCostBlobs::Names() {
  absl::StatusOr<std::vector<std::string>> files = file_system_->ListDir(dir_);
  if (absl::IsNotFound(files.status())) return std::vector<std::string>();
  if (!files.ok()) return files.status();
  std::vector<std::string> names;
  for (const std::string& file : *files) {
    if (absl::EndsWith(file, kSuffix)) {
      names.push_back(file.substr(0, file.size() - kSuffix.size()));
    }
  }
  return names;
}

absl::Status FileCostBlobs::Remove(const std::string& sha256) {
  absl::Status removed = file_system_->Remove(Where(sha256));
  return absl::IsNotFound(removed) ? absl::OkStatus() : removed;
}

}  // namespace shard::storage
