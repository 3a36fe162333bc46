// shard-records: writes and checks record files (record_file.h).
//   shard-records fashion-mnist --out DIR [--data-path SRC] [--shards K]
//       DIR/train/ and DIR/test/ from the Fashion-MNIST idx files (default
//       SRC: /usr/share/datasets/fashion-mnist); each record is the label
//       byte and the 28x28 pixels (785 bytes).
//   shard-records synthetic --out DIR --records N --record-size B
//       [--shards K] [--seed S]
//       opaque records of pseudo-random bytes (for I/O benchmarks).
//   shard-records inspect PATH [--verify true]
//       the headers of a file or directory; --verify reads every record.
// Exit codes: 0 ok, 1 an error (named), 2 bad usage.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/cli_flags.h"
#include "shard/version.h"
#include "trainer/data/idx_file.h"
#include "trainer/data/record_file.h"

namespace shard::trainer::data {
namespace {

constexpr char kUsage[] =
    "usage: shard-records COMMAND [flags]\n"
    "  fashion-mnist --out DIR [--data-path SRC] [--shards 1]\n"
    "  synthetic     --out DIR --records N --record-size B [--shards 1]"
    " [--seed 0]\n"
    "  inspect       PATH [--verify false]\n";

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

absl::StatusOr<uint32_t> Shards(const client::CliFlags& flags) {
  absl::StatusOr<uint64_t> shards = flags.Uint64("shards", 1);
  if (!shards.ok()) return shards.status();
  if (*shards == 0 || *shards > 99999) {
    return absl::InvalidArgumentError("--shards must be in 1 .. 99999");
  }
  return static_cast<uint32_t>(*shards);
}

absl::Status FashionMnist(const std::vector<std::string>& args) {
  absl::StatusOr<client::CliFlags> flags =
      client::CliFlags::Parse(args, {"out", "data-path", "shards"});
  if (!flags.ok()) return flags.status();
  absl::StatusOr<std::string> out = flags->String("out");
  if (!out.ok()) return out.status();
  absl::StatusOr<uint32_t> shards = Shards(*flags);
  if (!shards.ok()) return shards.status();
  const std::string source =
      flags->String("data-path", kDefaultFashionMnistDir);
  for (const char* split : {"train", "test"}) {
    absl::StatusOr<ImageSplit> images = ReadFashionMnist(source, split);
    if (!images.ok()) return images.status();
    const uint64_t pixels = uint64_t{images->rows} * images->cols;
    RecordHeader header;
    header.record_size = static_cast<uint32_t>(1 + pixels);
    header.total_records = images->size();
    header.rows = images->rows;
    header.cols = images->cols;
    absl::Status written = WriteShards(
        *out + "/" + split, header, std::min<uint64_t>(*shards, images->size()),
        [&](uint64_t index, uint8_t* payload) {
          payload[0] = images->labels[index];
          std::copy_n(images->pixels.data() + index * pixels, pixels,
                      payload + 1);
        });
    if (!written.ok()) return written;
  }
  return absl::OkStatus();
}

absl::Status Synthetic(const std::vector<std::string>& args) {
  absl::StatusOr<client::CliFlags> flags = client::CliFlags::Parse(
      args, {"out", "records", "record-size", "shards", "seed"});
  if (!flags.ok()) return flags.status();
  absl::StatusOr<std::string> out = flags->String("out");
  absl::StatusOr<uint64_t> records = flags->Uint64("records");
  absl::StatusOr<uint64_t> record_size = flags->Uint64("record-size");
  absl::StatusOr<uint64_t> seed = flags->Uint64("seed", 0);
  absl::StatusOr<uint32_t> shards = Shards(*flags);
  for (const absl::Status& s :
       {out.status(), records.status(), record_size.status(), seed.status(),
        shards.status()}) {
    if (!s.ok()) return s;
  }
  if (*records == 0 || *record_size == 0 || *record_size > kMaxRecordSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("--records must be positive and --record-size in 1 .. ",
                     kMaxRecordSize));
  }
  RecordHeader header;
  header.record_size = static_cast<uint32_t>(*record_size);
  header.total_records = *records;
  const uint64_t key = *seed;
  return WriteShards(
      *out, header, std::min<uint64_t>(*shards, *records),
      [&](uint64_t index, uint8_t* payload) {
        // xorshift64* seeded by (seed, index).
        uint64_t x = (index + 1) * 0x9e3779b97f4a7c15ull ^ key;
        for (uint64_t i = 0; i < *record_size; ++i) {
          x ^= x >> 12;
          x ^= x << 25;
          x ^= x >> 27;
          payload[i] = static_cast<uint8_t>((x * 0x2545f4914f6cdd1dull) >> 56);
        }
      });
}

absl::Status Inspect(const std::vector<std::string>& args) {
  if (args.empty() || args[0].rfind("--", 0) == 0) {
    return absl::InvalidArgumentError("inspect needs a PATH");
  }
  absl::StatusOr<client::CliFlags> flags = client::CliFlags::Parse(
      std::vector<std::string>(args.begin() + 1, args.end()), {"verify"});
  if (!flags.ok()) return flags.status();
  absl::StatusOr<bool> verify = flags->Bool("verify", false);
  if (!verify.ok()) return verify.status();
  absl::StatusOr<RecordSet> set = RecordSet::Open(args[0]);
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
  if (*verify) {
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
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "help") {
    std::fputs(kUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::printf("shard-records %s\n", shard::Version().c_str());
    return 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  absl::Status status;
  if (args[0] == "fashion-mnist") {
    status = FashionMnist(rest);
  } else if (args[0] == "synthetic") {
    status = Synthetic(rest);
  } else if (args[0] == "inspect") {
    status = Inspect(rest);
  } else {
    std::fprintf(stderr, "shard-records: unknown command \"%s\"\n%s",
                 args[0].c_str(), kUsage);
    return 2;
  }
  if (!status.ok()) {
    std::fprintf(stderr, "shard-records: %s\n", status.ToString().c_str());
    return absl::IsInvalidArgument(status) ? 2 : 1;
  }
  return 0;
}
