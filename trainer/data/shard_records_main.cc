// shard-records: writes and checks record files (record_file.h).
//   shard-records fashion-mnist --out DIR [--data-path SRC] [--shards K]
//       [--by-class]
//       DIR/train/ and DIR/test/ from the Fashion-MNIST idx files (default
//       SRC: /usr/share/datasets/fashion-mnist); each record is the label
//       byte and the 28x28 pixels (785 bytes). --by-class: instead of
//       DIR/train/, one dataset per class, DIR/classes/NAME/ (the sources
//       of a mixture, shard-train --source).
//   shard-records synthetic --out DIR --records N --record-size B
//       [--shards K] [--seed S]
//       opaque records of pseudo-random bytes (for I/O benchmarks).
//   shard-records inspect PATH [--verify]
//       the headers of a file or directory; --verify reads every record.
// Exit codes: 0 ok, 1 an error (named), 2 bad usage.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/cli/command_line.h"
#include "shard/version.h"
#include "trainer/data/idx_file.h"
#include "trainer/data/record_file.h"

namespace shard::trainer::data {
namespace {

// Writes `count` records produced by fill(global_index, payload) as
// `shards` files in `dir`, printing progress to stderr.
template <typename Fill>
absl::Status WriteShards(const std::string& dir, RecordHeader header,
                         uint32_t shards, Fill fill) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) {
    return absl::UnavailableError(
        absl::StrCat(dir, ": cannot create: ", error.message()));
  }
  const uint64_t total = header.total_records;
  std::vector<uint8_t> payload(header.record_size);
  uint64_t written = 0, next_report = total / 10;
  for (uint32_t k = 0; k < shards; ++k) {
    header.first_index = total * k / shards;
    header.record_count = total * (k + 1) / shards - header.first_index;
    header.shard_index = k;
    header.shard_count = shards;
    const std::string path = dir + "/" + RecordShardName(k, shards);
    absl::StatusOr<std::unique_ptr<RecordWriter>> writer =
        RecordWriter::Create(path, header);
    if (!writer.ok()) return writer.status();
    for (uint64_t i = 0; i < header.record_count; ++i) {
      fill(header.first_index + i, payload.data());
      if (absl::Status s = (*writer)->Append(payload); !s.ok()) return s;
      if (++written >= next_report && total >= 100000) {
        std::fprintf(stderr, "  %llu / %llu records\n",
                     static_cast<unsigned long long>(written),
                     static_cast<unsigned long long>(total));
        next_report += total / 10;
      }
    }
    if (absl::Status s = (*writer)->Finish(); !s.ok()) return s;
  }
  std::printf("wrote %s: %llu records of %u bytes in %u file(s)\n", dir.c_str(),
              static_cast<unsigned long long>(total), header.record_size,
              shards);
  return absl::OkStatus();
}

// The subcommands' options (each uses its own).
struct Flags {
  std::string out;
  std::string data_path = kDefaultFashionMnistDir;
  uint32_t shards = 1;
  uint64_t records = 0;
  uint32_t record_size = 0;
  uint64_t seed = 0;
  std::string path;
  bool verify = false;
  bool by_class = false;
};

// Fashion-MNIST's classes by label, as --by-class names their datasets.
constexpr const char* kClassNames[] = {
    "tshirt", "trouser", "pullover", "dress", "coat",
    "sandal", "shirt",   "sneaker",  "bag",   "boot"};

// `images` as image records in `shards` files of `dir`.
absl::Status WriteImages(const ImageSplit& images, const std::string& dir,
                         uint32_t shards) {
  const uint64_t pixels = uint64_t{images.rows} * images.cols;
  RecordHeader header;
  header.record_size = static_cast<uint32_t>(1 + pixels);
  header.total_records = images.size();
  header.rows = images.rows;
  header.cols = images.cols;
  return WriteShards(dir, header, std::min<uint64_t>(shards, images.size()),
                     [&](uint64_t index, uint8_t* payload) {
                       payload[0] = images.labels[index];
                       std::copy_n(images.pixels.data() + index * pixels,
                                   pixels, payload + 1);
                     });
}

// The images of `images` whose label is `label`, in their order.
ImageSplit OfClass(const ImageSplit& images, uint8_t label) {
  const uint64_t pixels = uint64_t{images.rows} * images.cols;
  ImageSplit of_class{images.rows, images.cols, {}, {}};
  for (uint64_t i = 0; i < images.size(); ++i) {
    if (images.labels[i] != label) continue;
    of_class.labels.push_back(label);
    of_class.pixels.insert(of_class.pixels.end(),
                           images.pixels.begin() + i * pixels,
                           images.pixels.begin() + (i + 1) * pixels);
  }
  return of_class;
}

absl::Status FashionMnist(const Flags& flags) {
  for (const char* split : {"train", "test"}) {
    absl::StatusOr<ImageSplit> images =
        ReadFashionMnist(flags.data_path, split);
    if (!images.ok()) return images.status();
    if (!flags.by_class || std::string(split) == "test") {
      absl::Status written =
          WriteImages(*images, flags.out + "/" + split, flags.shards);
      if (!written.ok()) return written;
      continue;
    }
    for (uint8_t label = 0; label < std::size(kClassNames); ++label) {
      absl::Status written =
          WriteImages(OfClass(*images, label),
                      absl::StrCat(flags.out, "/classes/", kClassNames[label]),
                      flags.shards);
      if (!written.ok()) return written;
    }
  }
  return absl::OkStatus();
}

absl::Status Synthetic(const Flags& flags) {
  RecordHeader header;
  header.record_size = flags.record_size;
  header.total_records = flags.records;
  const uint64_t key = flags.seed;
  return WriteShards(
      flags.out, header, std::min<uint64_t>(flags.shards, flags.records),
      [&](uint64_t index, uint8_t* payload) {
        // xorshift64* seeded by (seed, index).
        uint64_t x = (index + 1) * 0x9e3779b97f4a7c15ull ^ key;
        for (uint64_t i = 0; i < flags.record_size; ++i) {
          x ^= x >> 12;
          x ^= x << 25;
          x ^= x >> 27;
          payload[i] = static_cast<uint8_t>((x * 0x2545f4914f6cdd1dull) >> 56);
        }
      });
}

absl::Status Inspect(const Flags& flags) {
  absl::StatusOr<RecordSet> set = RecordSet::Open(flags.path);
  if (!set.ok()) return set.status();
  for (const RecordFile& file : set->files()) {
    const RecordHeader& h = file.header();
    std::printf(
        "%s: records %llu .. %llu of %llu, %u bytes each, shard %u of "
        "%u%s\n",
        file.path().c_str(), static_cast<unsigned long long>(h.first_index),
        static_cast<unsigned long long>(h.first_index + h.record_count),
        static_cast<unsigned long long>(h.total_records), h.record_size,
        h.shard_index, h.shard_count,
        h.rows > 0 ? absl::StrCat(", ", h.rows, "x", h.cols, " images").c_str()
                   : "");
  }
  if (flags.verify) {
    std::vector<uint8_t> payload(set->record_size());
    for (uint64_t i = 0; i < set->size(); ++i) {
      if (absl::Status s = set->Read(i, absl::MakeSpan(payload)); !s.ok()) {
        return s;
      }
    }
    std::printf("verified %llu records\n",
                static_cast<unsigned long long>(set->size()));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace shard::trainer::data

int main(int argc, char** argv) {
  using namespace shard::trainer::data;  // NOLINT: one file's entry point
  CLI::App app("Writes and checks record files.");
  shard::cli::Configure(app, "shard-records");
  app.require_subcommand(1);
  Flags flags;
  CLI::App* fashion = app.add_subcommand(
      "fashion-mnist",
      "DIR/train/ and DIR/test/ from the Fashion-MNIST idx files; each record "
      "is the label byte and the 28x28 pixels (785 bytes)");
  CLI::App* synthetic = app.add_subcommand(
      "synthetic", "opaque records of pseudo-random bytes (I/O benchmarks)");
  for (CLI::App* writer : {fashion, synthetic}) {
    shard::cli::AddOption(*writer, "--out", flags.out, "output directory")
        ->required();
    shard::cli::AddOption(*writer, "--shards", flags.shards, "files to write")
        ->check(CLI::Range(1, 99999));
  }
  shard::cli::AddOption(*fashion, "--data-path", flags.data_path,
                        "directory of the idx files");
  fashion->add_flag("--by-class", flags.by_class,
                    "write each class of the training set as its own "
                    "dataset, DIR/classes/NAME/ (tshirt, trouser, pullover, "
                    "dress, coat, sandal, shirt, sneaker, bag, boot), "
                    "instead of DIR/train/");
  shard::cli::AddOption(*synthetic, "--records", flags.records,
                        "records to write")
      ->required()
      ->check(shard::cli::AtLeast(1));
  shard::cli::AddOption(*synthetic, "--record-size", flags.record_size,
                        "bytes each")
      ->required()
      ->check(CLI::Range(uint32_t{1}, kMaxRecordSize));
  shard::cli::AddOption(*synthetic, "--seed", flags.seed, "seed of the bytes");
  CLI::App* inspect = app.add_subcommand(
      "inspect", "print the headers of a record file or directory");
  shard::cli::AddOption(*inspect, "PATH", flags.path, "file or directory")
      ->required();
  inspect->add_flag("--verify", flags.verify, "read every record too");
  if (std::optional<int> exit_code = shard::cli::Parse(app, argc, argv)) {
    return *exit_code;
  }
  absl::Status status = fashion->parsed()     ? FashionMnist(flags)
                        : synthetic->parsed() ? Synthetic(flags)
                                              : Inspect(flags);
  if (!status.ok()) {
    std::fprintf(stderr, "shard-records: %s\n", status.ToString().c_str());
    return absl::IsInvalidArgument(status) ? 2 : 1;
  }
  return 0;
}
