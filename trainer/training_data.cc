#include "trainer/training_data.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "trainer/data/idx_file.h"
#include "trainer/data/record_file.h"
#include "trainer/image_datasets.h"

namespace shard::trainer {
namespace {

constexpr int64_t kImageClasses = 10;

// INVALID_ARGUMENT when `requested` exceeds `available`; else the size to
// use (all when requested is 0).
absl::StatusOr<uint64_t> Subset(const char* flag, uint64_t requested,
                                uint64_t available, const std::string& what) {
  if (requested > available) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", requested,
                                                   " exceeds the ", available,
                                                   " samples of ", what));
  }
  return requested == 0 ? available : requested;
}

}  // namespace

absl::StatusOr<DatasetKind> ParseDatasetKind(const std::string& name) {
  if (name == "synthetic") return DatasetKind::kSynthetic;
  if (name == "fashion-mnist") return DatasetKind::kFashionMnist;
  if (name == "records") return DatasetKind::kRecords;
  return absl::InvalidArgumentError(absl::StrCat(
      "--dataset must be synthetic, fashion-mnist or records, got \"", name,
      "\""));
}

absl::StatusOr<TrainingData> TrainingData::Load(const DataOptions& options) {
  TrainingData data;
  data.kind_ = options.kind;
  if (options.kind == DatasetKind::kSynthetic) {
    data.task_ = Task::kRegression;
    data.shape_ = {SyntheticRegression::kFeatures};
    data.outputs_ = 1;
    data.train_size_ = options.train_size;
    data.eval_size_ = options.eval_size;
    data.description_ = "synthetic regression";
    return data;
  }
  data.task_ = Task::kClassification;
  data.outputs_ = kImageClasses;
  uint64_t train_available = 0, eval_available = 0;
  uint32_t rows = 0, cols = 0;
  if (options.kind == DatasetKind::kFashionMnist) {
    const std::string dir =
        options.path.empty() ? data::kDefaultFashionMnistDir : options.path;
    absl::StatusOr<data::ImageSplit> train =
        data::ReadFashionMnist(dir, "train");
    if (!train.ok()) return train.status();
    absl::StatusOr<data::ImageSplit> test = data::ReadFashionMnist(dir, "test");
    if (!test.ok()) return test.status();
    rows = train->rows;
    cols = train->cols;
    train_available = train->size();
    eval_available = test->size();
    auto train_split =
        std::make_shared<const data::ImageSplit>(*std::move(train));
    auto test_split =
        std::make_shared<const data::ImageSplit>(*std::move(test));
    absl::StatusOr<uint64_t> train_size = Subset(
        "--dataset-size", options.train_size, train_available, dir + " train");
    absl::StatusOr<uint64_t> eval_size =
        Subset("--eval-size", options.eval_size, eval_available, dir + " test");
    if (!train_size.ok()) return train_size.status();
    if (!eval_size.ok()) return eval_size.status();
    data.train_size_ = *train_size;
    data.eval_size_ = *eval_size;
    data.train_ = std::make_shared<InMemoryImages>(train_split, *train_size);
    data.eval_ = std::make_shared<InMemoryImages>(test_split, *eval_size);
  } else {
    if (options.path.empty()) {
      return absl::InvalidArgumentError(
          "--dataset records needs --data-path (a directory with train/ and "
          "optionally test/ record files)");
    }
    absl::StatusOr<data::RecordSet> train =
        data::RecordSet::Open(options.path + "/train");
    if (!train.ok()) return train.status();
    if (train->rows() == 0 || train->cols() == 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(options.path, "/train: records are not images"));
    }
    rows = train->rows();
    cols = train->cols();
    train_available = train->size();
    auto train_records =
        std::make_shared<const data::RecordSet>(*std::move(train));
    absl::StatusOr<uint64_t> train_size =
        Subset("--dataset-size", options.train_size, train_available,
               options.path + "/train");
    if (!train_size.ok()) return train_size.status();
    data.train_size_ = *train_size;
    data.train_ = std::make_shared<RecordImages>(train_records, *train_size);
    std::error_code error;
    if (std::filesystem::exists(options.path + "/test", error)) {
      absl::StatusOr<data::RecordSet> test =
          data::RecordSet::Open(options.path + "/test");
      if (!test.ok()) return test.status();
      if (test->rows() != rows || test->cols() != cols) {
        return absl::FailedPreconditionError(absl::StrCat(
            options.path, "/test: image shape differs from train/"));
      }
      eval_available = test->size();
      auto test_records =
          std::make_shared<const data::RecordSet>(*std::move(test));
      absl::StatusOr<uint64_t> eval_size =
          Subset("--eval-size", options.eval_size, eval_available,
                 options.path + "/test");
      if (!eval_size.ok()) return eval_size.status();
      data.eval_size_ = *eval_size;
      data.eval_ = std::make_shared<RecordImages>(test_records, *eval_size);
    }
  }
  data.shape_ = {1, rows, cols};
  data.description_ = absl::StrCat(
      options.kind == DatasetKind::kFashionMnist ? "fashion-mnist" : "records",
      " (", data.train_size_, " of ", train_available, " train, ",
      data.eval_size_, " of ", eval_available, " test, ", rows, "x", cols, ", ",
      kImageClasses, " classes)");
  return data;
}

SharedDataset TrainingData::Train(uint64_t job_size) const {
  if (kind_ == DatasetKind::kSynthetic) {
    return SharedDataset(std::make_shared<SyntheticRegression>(job_size));
  }
  return SharedDataset(train_);
}

SharedDataset TrainingData::Eval(uint64_t job_size) const {
  if (kind_ == DatasetKind::kSynthetic) {
    return SharedDataset(
        std::make_shared<SyntheticRegression>(eval_size_, job_size));
  }
  return SharedDataset(eval_);
}

}  // namespace shard::trainer
