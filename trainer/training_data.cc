#include "trainer/training_data.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "trainer/data/idx_file.h"
#include "trainer/data/record_file.h"
#include "trainer/image_datasets.h"
#include "trainer/synthetic_dataset.h"

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

// The first `requested` samples (all when 0) of `source`, which holds
// `available`, as a Dataset (InMemoryImages or RecordImages).
struct FirstSamples {
  std::shared_ptr<IndexedDataset> dataset;
  uint64_t size = 0;
};
template <typename Dataset, typename Source>
absl::StatusOr<FirstSamples> TakeFirst(std::shared_ptr<const Source> source,
                                       uint64_t available, const char* flag,
                                       uint64_t requested,
                                       const std::string& what) {
  absl::StatusOr<uint64_t> size = Subset(flag, requested, available, what);
  if (!size.ok()) return size.status();
  return FirstSamples{std::make_shared<Dataset>(std::move(source), *size),
                      *size};
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
  absl::StatusOr<ImageFiles> files = options.kind == DatasetKind::kFashionMnist
                                         ? data.LoadFashionMnist(options)
                                         : data.LoadRecords(options);
  if (!files.ok()) return files.status();
  data.shape_ = {1, files->rows, files->cols};
  data.description_ = absl::StrCat(
      options.kind == DatasetKind::kFashionMnist ? "fashion-mnist"
      : options.sources.empty()
          ? "records"
          : absl::StrCat("records of ", options.sources.size(), " sources"),
      " (", data.train_size_, " of ", files->train_available, " train, ",
      data.eval_size_, " of ", files->eval_available, " test, ", files->rows,
      "x", files->cols, ", ", kImageClasses, " classes)");
  return data;
}

absl::StatusOr<TrainingData::ImageFiles> TrainingData::LoadFashionMnist(
    const DataOptions& options) {
  const std::string dir =
      options.path.empty() ? data::kDefaultFashionMnistDir : options.path;
  absl::StatusOr<data::ImageSplit> train = data::ReadFashionMnist(dir, "train");
  if (!train.ok()) return train.status();
  absl::StatusOr<data::ImageSplit> test = data::ReadFashionMnist(dir, "test");
  if (!test.ok()) return test.status();
  ImageFiles files{train->size(), test->size(), train->rows, train->cols};
  absl::StatusOr<FirstSamples> train_set = TakeFirst<InMemoryImages>(
      std::make_shared<const data::ImageSplit>(*std::move(train)),
      files.train_available, "--dataset-size", options.train_size,
      dir + " train");
  if (!train_set.ok()) return train_set.status();
  absl::StatusOr<FirstSamples> eval_set = TakeFirst<InMemoryImages>(
      std::make_shared<const data::ImageSplit>(*std::move(test)),
      files.eval_available, "--eval-size", options.eval_size, dir + " test");
  if (!eval_set.ok()) return eval_set.status();
  train_ = train_set->dataset;
  train_size_ = train_set->size;
  eval_ = eval_set->dataset;
  eval_size_ = eval_set->size;
  return files;
}

absl::StatusOr<data::RecordSet> TrainingData::OpenTrainRecords(
    const DataOptions& options) {
  if (options.sources.empty()) {
    if (options.path.empty()) {
      return absl::InvalidArgumentError(
          "--dataset records needs --data-path (a directory with train/ and "
          "optionally test/ record files) or the sources of a mixture "
          "(--source)");
    }
    return data::RecordSet::Open(options.path + "/train");
  }
  std::vector<data::RecordSet> sets;
  for (const SourceFiles& source : options.sources) {
    absl::StatusOr<data::RecordSet> set = data::RecordSet::Open(source.path);
    if (!set.ok()) {
      return absl::Status(
          set.status().code(),
          absl::StrCat("source ", source.name, ": ", set.status().message()));
    }
    source_names_.push_back(source.name);
    source_sizes_.push_back(set->size());
    sets.push_back(*std::move(set));
  }
  return data::RecordSet::Concat(std::move(sets));
}

absl::StatusOr<TrainingData::ImageFiles> TrainingData::LoadRecords(
    const DataOptions& options) {
  absl::StatusOr<data::RecordSet> train = OpenTrainRecords(options);
  if (!train.ok()) return train.status();
  const std::string train_name =
      options.sources.empty() ? options.path + "/train" : "the sources";
  if (train->rows() == 0 || train->cols() == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(train_name, ": records are not images"));
  }
  ImageFiles files{train->size(), 0, train->rows(), train->cols()};
  absl::StatusOr<FirstSamples> train_set = TakeFirst<RecordImages>(
      std::make_shared<const data::RecordSet>(*std::move(train)),
      files.train_available, "--dataset-size", options.train_size, train_name);
  if (!train_set.ok()) return train_set.status();
  train_ = train_set->dataset;
  train_size_ = train_set->size;
  std::error_code error;
  if (options.path.empty() ||
      !std::filesystem::exists(options.path + "/test", error)) {
    return files;
  }
  absl::StatusOr<data::RecordSet> test =
      data::RecordSet::Open(options.path + "/test");
  if (!test.ok()) return test.status();
  if (test->rows() != files.rows || test->cols() != files.cols) {
    return absl::FailedPreconditionError(
        absl::StrCat(options.path, "/test: image shape differs from train/"));
  }
  files.eval_available = test->size();
  absl::StatusOr<FirstSamples> eval_set = TakeFirst<RecordImages>(
      std::make_shared<const data::RecordSet>(*std::move(test)),
      files.eval_available, "--eval-size", options.eval_size,
      options.path + "/test");
  if (!eval_set.ok()) return eval_set.status();
  eval_ = eval_set->dataset;
  eval_size_ = eval_set->size;
  return files;
}

void TrainingData::SizeSpec(shard::v1::JobSpec& spec) const {
  spec.set_dataset_size(train_size_);
  for (int k = 0; k < spec.sources_size(); ++k) {
    spec.mutable_sources(k)->set_size(source_sizes_[k]);
  }
}

absl::Status TrainingData::CheckFits(const std::string& job_id,
                                     const shard::v1::JobSpec& spec) const {
  if (!size_from_job() && spec.dataset_size() != train_size_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job_id, " has dataset_size ", spec.dataset_size(),
        " but the training data (", description_, ") has ", train_size_,
        " samples; create the job for this dataset or pass a matching "
        "--dataset-size"));
  }
  std::vector<std::string> job_sources;
  for (const shard::v1::Source& source : spec.sources()) {
    job_sources.push_back(absl::StrCat(source.name(), ":", source.size()));
  }
  std::vector<std::string> data_sources;
  for (size_t k = 0; k < source_names_.size(); ++k) {
    data_sources.push_back(
        absl::StrCat(source_names_[k], ":", source_sizes_[k]));
  }
  if (job_sources != data_sources) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job_id, " has the sources [", absl::StrJoin(job_sources, " "),
        "] (NAME:RECORDS) but --source gives [",
        absl::StrJoin(data_sources, " "),
        "]; give the job's sources, in its order"));
  }
  return absl::OkStatus();
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
