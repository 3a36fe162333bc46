// What shard-train trains and evaluates on (--dataset, --data-path):
//   synthetic      noisy linear regression computed from the index
//                  (SyntheticRegression); the job's dataset size decides the
//                  training set, the evaluation set follows it;
//   fashion-mnist  the idx files (gzipped or not) of a directory, default
//                  Debian's /usr/share/datasets/fashion-mnist: 60,000
//                  training and 10,000 test images of 10 classes;
//   records        record files (trainer/data/record_file.h) of image
//                  records: DIR/train (a file or a directory of *.rec) and,
//                  for evaluation, DIR/test, as `shard-records` writes them;
//                  or a mixture: the sources' record sets one after another
//                  (source k's record j is the sizes of sources 0..k-1 plus
//                  j) and, when DIR is given, DIR/test for evaluation.
// Immutable after Load(); datasets it hands out are thread-safe.
#ifndef TRAINER_TRAINING_DATA_H_
#define TRAINER_TRAINING_DATA_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "shard/v1/shard.pb.h"
#include "trainer/data/record_file.h"
#include "trainer/indexed_dataset.h"

namespace shard::trainer {

enum class DatasetKind { kSynthetic, kFashionMnist, kRecords };
absl::StatusOr<DatasetKind> ParseDatasetKind(const std::string& name);

enum class Task { kRegression, kClassification };

// One source of a mixture of record files (shard-train --source).
struct SourceFiles {
  std::string name;
  std::string path;  // a record file or a directory of *.rec
};

struct DataOptions {
  DatasetKind kind = DatasetKind::kSynthetic;
  // Directory (fashion-mnist, records); empty: the default location.
  std::string path;
  // records only: a mixture's sources, in dataset order (empty: DIR/train).
  std::vector<SourceFiles> sources;
  // Training samples: synthetic, the size a new job gets; real data, the
  // first N samples (0: all).
  uint64_t train_size = 0;
  // Evaluation samples: synthetic, how many; real data, the first N of the
  // test set (0: all). Evaluation is skipped when there is no test set.
  uint64_t eval_size = 0;
};

class TrainingData {
 public:
  // Reads the dataset. NOT_FOUND when its files are missing, DATA_LOSS when
  // they are damaged (naming the file and offset), INVALID_ARGUMENT when
  // train_size or eval_size exceed the data.
  static absl::StatusOr<TrainingData> Load(const DataOptions& options);

  Task task() const { return task_; }
  // Shape of one example's features, e.g. {16} or {1, 28, 28}.
  const std::vector<int64_t>& example_shape() const { return shape_; }
  // Regression: 1; classification: the number of classes.
  int64_t outputs() const { return outputs_; }
  // The dataset size a new job is created with.
  uint64_t train_size() const { return train_size_; }
  // A mixture's: each source's name and records, in order (else empty).
  const std::vector<std::string>& source_names() const { return source_names_; }
  const std::vector<uint64_t>& source_sizes() const { return source_sizes_; }
  // True when a job of any dataset size can be trained (synthetic); else
  // the job's size must equal train_size().
  bool size_from_job() const { return kind_ == DatasetKind::kSynthetic; }
  // Samples evaluated after training (0: none).
  uint64_t eval_size() const { return eval_size_; }
  // Sets the sizes of a new job's spec from the data: the dataset size,
  // and a mixture's source sizes (the spec has the --source names, in
  // order).
  void SizeSpec(shard::v1::JobSpec& spec) const;
  // FAILED_PRECONDITION when the indices of job `job_id` (of normalised
  // `spec`) do not number this data: another dataset size, or a mixture's
  // sources of other names, order or sizes.
  absl::Status CheckFits(const std::string& job_id,
                         const shard::v1::JobSpec& spec) const;
  // The training and evaluation sets of a job of `job_size` samples.
  SharedDataset Train(uint64_t job_size) const;
  SharedDataset Eval(uint64_t job_size) const;
  // "fashion-mnist (60000 train, 10000 test, 28x28, 10 classes)".
  const std::string& description() const { return description_; }

 private:
  // What an image dataset's files hold before --dataset-size and
  // --eval-size take their first samples.
  struct ImageFiles {
    uint64_t train_available = 0;
    uint64_t eval_available = 0;
    uint32_t rows = 0;
    uint32_t cols = 0;
  };
  // Set train_/eval_ and their sizes from the files options name.
  absl::StatusOr<ImageFiles> LoadFashionMnist(const DataOptions& options);
  absl::StatusOr<ImageFiles> LoadRecords(const DataOptions& options);
  // The training records: DIR/train, or the sources one after another
  // (setting source_names_ and source_sizes_).
  absl::StatusOr<data::RecordSet> OpenTrainRecords(const DataOptions& options);

  DatasetKind kind_ = DatasetKind::kSynthetic;
  Task task_ = Task::kRegression;
  std::vector<int64_t> shape_;
  int64_t outputs_ = 1;
  uint64_t train_size_ = 0;
  std::vector<std::string> source_names_;
  std::vector<uint64_t> source_sizes_;
  uint64_t eval_size_ = 0;
  std::shared_ptr<IndexedDataset> train_;
  std::shared_ptr<IndexedDataset> eval_;
  std::string description_;
};

}  // namespace shard::trainer

#endif  // TRAINER_TRAINING_DATA_H_
