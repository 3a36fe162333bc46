#include "trainer/checkpoint.h"

#include <filesystem>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/storage/file_system.h"
#include "torch/serialize.h"

namespace shard::trainer {

std::string CheckpointPath(const std::string& dir, const Progress& progress) {
  return absl::StrCat(dir, "/checkpoint-", progress.epoch, "-",
                      progress.position, ".pt");
}

void PruneCheckpoints(const std::string& dir, const Progress& keep) {
  const std::string kept = CheckpointPath(dir, keep);
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("checkpoint-", 0) == 0 && entry.path().string() != kept) {
      std::filesystem::remove(entry.path(), error);
    }
  }
}

absl::Status SaveCheckpoint(const std::string& dir, torch::nn::Module& model,
                            torch::optim::Optimizer& optimizer,
                            const Progress& progress) {
  const std::string path = CheckpointPath(dir, progress);
  std::ostringstream bytes;
  try {
    std::filesystem::create_directories(dir);
    torch::serialize::OutputArchive archive;
    model.save(archive);
    torch::serialize::OutputArchive optimizer_archive;
    optimizer.save(optimizer_archive);
    archive.write("optimizer", optimizer_archive);
    archive.write("progress_epoch",
                  torch::tensor(static_cast<int64_t>(progress.epoch)),
                  /*is_buffer=*/true);
    archive.write("progress_position",
                  torch::tensor(static_cast<int64_t>(progress.position)),
                  /*is_buffer=*/true);
    archive.save_to(bytes);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("serialising checkpoint ", path, ": ", e.what()));
  }
  return storage::PosixFileSystem()->WriteFileAtomically(path, bytes.str());
}

absl::Status LoadCheckpoint(const std::string& dir, const Progress& progress,
                            torch::nn::Module& model,
                            torch::optim::Optimizer& optimizer) {
  const std::string path = CheckpointPath(dir, progress);
  if (!std::filesystem::exists(path)) {
    return absl::NotFoundError(absl::StrCat("no checkpoint ", path));
  }
  try {
    torch::serialize::InputArchive archive;
    archive.load_from(path);
    model.load(archive);
    torch::serialize::InputArchive optimizer_archive;
    archive.read("optimizer", optimizer_archive);
    optimizer.load(optimizer_archive);
    torch::Tensor epoch, position;
    archive.read("progress_epoch", epoch, /*is_buffer=*/true);
    archive.read("progress_position", position, /*is_buffer=*/true);
    if (static_cast<uint64_t>(epoch.item<int64_t>()) != progress.epoch ||
        static_cast<uint64_t>(position.item<int64_t>()) != progress.position) {
      return absl::DataLossError(
          absl::StrCat(path, " holds different progress"));
    }
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::DataLossError(
        absl::StrCat("reading checkpoint ", path, ": ", e.what()));
  }
}

}  // namespace shard::trainer
