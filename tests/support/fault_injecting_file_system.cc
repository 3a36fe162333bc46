#include "tests/support/fault_injecting_file_system.h"

#include "absl/status/status.h"
#include "absl/time/clock.h"

namespace shard::testing {

class TrackedFile : public storage::AppendableFile {
 public:
  TrackedFile(FaultInjectingFileSystem* fs, std::string path,
              std::unique_ptr<storage::AppendableFile> real)
      : fs_(fs), path_(std::move(path)), real_(std::move(real)) {}

  absl::Status Append(absl::string_view data) override {
    absl::Status status = real_->Append(data);
    absl::MutexLock lock(&fs_->mu_);
    if (status.ok()) fs_->written_bytes_[path_] += data.size();
    return status;
  }
  absl::Status Sync() override {
    absl::Duration delay;
    {
      absl::MutexLock lock(&fs_->mu_);
      ++fs_->syncs_;
      delay = fs_->sync_delay_;
      if (fs_->failing_syncs_ > 0) {
        --fs_->failing_syncs_;
        return absl::InternalError("injected fsync failure");
      }
    }
    absl::SleepFor(delay);
    absl::Status status = real_->Sync();
    absl::MutexLock lock(&fs_->mu_);
    if (status.ok()) fs_->synced_bytes_[path_] = fs_->written_bytes_[path_];
    return status;
  }

 private:
  FaultInjectingFileSystem* fs_;
  std::string path_;
  std::unique_ptr<storage::AppendableFile> real_;
};

void FaultInjectingFileSystem::FailSyncs(int count) {
  absl::MutexLock lock(&mu_);
  failing_syncs_ = count;
}

void FaultInjectingFileSystem::DelaySyncs(absl::Duration delay) {
  absl::MutexLock lock(&mu_);
  sync_delay_ = delay;
}

int FaultInjectingFileSystem::syncs() const {
  absl::MutexLock lock(&mu_);
  return syncs_;
}

void FaultInjectingFileSystem::SimulateCrash() {
  absl::MutexLock lock(&mu_);
  for (const auto& [path, synced] : synced_bytes_) {
    real_->Truncate(path, synced).IgnoreError();
    written_bytes_[path] = synced;
  }
  for (const auto& [path, written] : written_bytes_) {
    if (synced_bytes_.count(path) == 0) real_->Truncate(path, 0).IgnoreError();
  }
}

absl::StatusOr<std::unique_ptr<storage::AppendableFile>>
FaultInjectingFileSystem::OpenAppendable(const std::string& path) {
  absl::StatusOr<std::unique_ptr<storage::AppendableFile>> real =
      real_->OpenAppendable(path);
  if (!real.ok()) return real.status();
  absl::StatusOr<std::string> existing = real_->ReadFile(path);
  const uint64_t size = existing.ok() ? existing->size() : 0;
  absl::MutexLock lock(&mu_);
  written_bytes_[path] = size;
  synced_bytes_[path] = size;
  return std::unique_ptr<storage::AppendableFile>(
      std::make_unique<TrackedFile>(this, path, *std::move(real)));
}

absl::StatusOr<std::string> FaultInjectingFileSystem::ReadFile(
    const std::string& path) {
  return real_->ReadFile(path);
}

absl::Status FaultInjectingFileSystem::WriteFileAtomically(
    const std::string& path, absl::string_view contents) {
  return real_->WriteFileAtomically(path, contents);
}

absl::Status FaultInjectingFileSystem::Truncate(const std::string& path,
                                                uint64_t size) {
  absl::Status status = real_->Truncate(path, size);
  absl::MutexLock lock(&mu_);
  if (status.ok()) {
    written_bytes_[path] = size;
    synced_bytes_[path] = size;
  }
  return status;
}

absl::StatusOr<std::vector<std::string>> FaultInjectingFileSystem::ListDir(
    const std::string& dir) {
  return real_->ListDir(dir);
}

absl::Status FaultInjectingFileSystem::Remove(const std::string& path) {
  absl::MutexLock lock(&mu_);
  written_bytes_.erase(path);
  synced_bytes_.erase(path);
  return real_->Remove(path);
}

absl::Status FaultInjectingFileSystem::CreateDir(const std::string& dir) {
  return real_->CreateDir(dir);
}

}  // namespace shard::testing
