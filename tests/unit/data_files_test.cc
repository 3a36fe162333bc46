// Record files and idx files: round trips, reads by index, and damaged or
// truncated files reported as DATA_LOSS naming the file and the offset.
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "trainer/data/idx_file.h"
#include "trainer/data/record_file.h"

namespace shard::trainer::data {
namespace {

namespace fs = std::filesystem;

class DataFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("shard-data-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Record i's payload: its index in every byte position, mixed.
  static std::vector<uint8_t> Payload(uint64_t i, uint32_t size) {
    std::vector<uint8_t> out(size);
    for (uint32_t b = 0; b < size; ++b)
      out[b] = static_cast<uint8_t>(i * 31 + b);
    return out;
  }

  // Writes `total` records of `size` bytes as `shards` files in dir_/name.
  std::string WriteSet(const std::string& name, uint64_t total, uint32_t size,
                       uint32_t shards) {
    const fs::path dir = dir_ / name;
    fs::create_directories(dir);
    for (uint32_t k = 0; k < shards; ++k) {
      RecordHeader h;
      h.record_size = size;
      h.total_records = total;
      h.first_index = total * k / shards;
      h.record_count = total * (k + 1) / shards - h.first_index;
      h.shard_index = k;
      h.shard_count = shards;
      auto writer = RecordWriter::Create(dir / RecordShardName(k, shards), h);
      EXPECT_TRUE(writer.ok()) << writer.status();
      for (uint64_t i = 0; i < h.record_count; ++i) {
        EXPECT_TRUE((*writer)->Append(Payload(h.first_index + i, size)).ok());
      }
      EXPECT_TRUE((*writer)->Finish().ok());
    }
    return dir.string();
  }

  static void FlipByte(const std::string& path, uint64_t offset) {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(offset);
    char byte;
    file.read(&byte, 1);
    byte ^= 0x5a;
    file.seekp(offset);
    file.write(&byte, 1);
  }

  fs::path dir_;
};

TEST_F(DataFilesTest, RecordsRoundTripAcrossShardFilesByIndex) {
  const std::string dir = WriteSet("set", 1001, 785, 3);
  auto set = RecordSet::Open(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->size(), 1001u);
  EXPECT_EQ(set->files().size(), 3u);
  std::vector<uint8_t> got(785);
  for (uint64_t i : {0ull, 333ull, 334ull, 666ull, 667ull, 1000ull, 17ull}) {
    ASSERT_TRUE(set->Read(i, absl::MakeSpan(got)).ok()) << i;
    EXPECT_EQ(got, Payload(i, 785)) << i;
  }
  EXPECT_TRUE(absl::IsOutOfRange(set->Read(1001, absl::MakeSpan(got))));
}

TEST_F(DataFilesTest, ConcatenatedSetsNumberTheirRecordsOneAfterAnother) {
  std::vector<RecordSet> sets;
  for (auto [name, size, shards] :
       {std::tuple{"a", 7, 1}, std::tuple{"b", 101, 3},
        std::tuple{"c", 5, 2}}) {
    auto set = RecordSet::Open(WriteSet(name, size, 16, shards));
    ASSERT_TRUE(set.ok()) << set.status();
    sets.push_back(*std::move(set));
  }
  auto all = RecordSet::Concat(std::move(sets));
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 113u);
  std::vector<uint8_t> got(16);
  // Each set's record j is (records before the set) + j.
  for (auto [index, local] : {std::pair{0, 0},
                              {6, 6},
                              {7, 0},
                              {41, 34},
                              {107, 100},
                              {108, 0},
                              {112, 4}}) {
    ASSERT_TRUE(all->Read(index, absl::MakeSpan(got)).ok()) << index;
    EXPECT_EQ(got, Payload(local, 16)) << index;
  }
  EXPECT_TRUE(absl::IsOutOfRange(all->Read(113, absl::MakeSpan(got))));
}

TEST_F(DataFilesTest, SetsOfDifferentRecordsDoNotConcatenate) {
  std::vector<RecordSet> sets;
  sets.push_back(*RecordSet::Open(WriteSet("a", 3, 16, 1)));
  const std::string other = WriteSet("b", 3, 8, 1);
  sets.push_back(*RecordSet::Open(other));
  auto all = RecordSet::Concat(std::move(sets));
  ASSERT_TRUE(absl::IsFailedPrecondition(all.status())) << all.status();
  EXPECT_NE(all.status().message().find(other), std::string::npos);
  EXPECT_TRUE(absl::IsInvalidArgument(RecordSet::Concat({}).status()));
}

TEST_F(DataFilesTest, ATruncatedFileNamesTheFileAndOffset) {
  const std::string dir = WriteSet("set", 100, 64, 1);
  const std::string path = dir + "/" + RecordShardName(0, 1);
  fs::resize_file(path, fs::file_size(path) - 10);
  auto file = RecordFile::Open(path);
  ASSERT_TRUE(absl::IsDataLoss(file.status())) << file.status();
  EXPECT_NE(file.status().message().find(path), std::string::npos);
  EXPECT_NE(file.status().message().find("offset"), std::string::npos);
  EXPECT_NE(file.status().message().find("truncated"), std::string::npos);

  fs::resize_file(path, 30);  // Not even a header.
  EXPECT_TRUE(absl::IsDataLoss(RecordFile::Open(path).status()));
}

TEST_F(DataFilesTest, ACorruptRecordFailsOnlyItsOwnRead) {
  const std::string dir = WriteSet("set", 100, 64, 1);
  const std::string path = dir + "/" + RecordShardName(0, 1);
  const uint64_t record17 = kRecordHeaderBytes + 17 * (64 + 4);
  FlipByte(path, record17 + 5);
  auto set = RecordSet::Open(dir);
  ASSERT_TRUE(set.ok()) << set.status();
  std::vector<uint8_t> got(64);
  EXPECT_TRUE(set->Read(16, absl::MakeSpan(got)).ok());
  EXPECT_TRUE(set->Read(18, absl::MakeSpan(got)).ok());
  absl::Status bad = set->Read(17, absl::MakeSpan(got));
  ASSERT_TRUE(absl::IsDataLoss(bad)) << bad;
  EXPECT_NE(bad.message().find(path + ": offset " + std::to_string(record17)),
            std::string::npos)
      << bad;
}

TEST_F(DataFilesTest, DamagedHeadersAndNonRecordFilesAreRefused) {
  const std::string dir = WriteSet("set", 10, 8, 1);
  const std::string path = dir + "/" + RecordShardName(0, 1);
  FlipByte(path, 20);  // record_count: caught by the header checksum
  auto damaged = RecordFile::Open(path);
  EXPECT_TRUE(absl::IsDataLoss(damaged.status())) << damaged.status();
  EXPECT_NE(damaged.status().message().find("checksum"), std::string::npos);

  const std::string text = (dir_ / "text.rec").string();
  std::ofstream(text) << std::string(200, 'x');
  auto not_records = RecordFile::Open(text);
  EXPECT_TRUE(absl::IsDataLoss(not_records.status()));
  EXPECT_NE(not_records.status().message().find("offset 0"), std::string::npos);
  EXPECT_TRUE(absl::IsNotFound(
      RecordFile::Open((dir_ / "missing.rec").string()).status()));
}

TEST_F(DataFilesTest, AMissingShardFileIsAGapInTheSet) {
  const std::string dir = WriteSet("set", 90, 8, 3);
  fs::remove(dir + "/" + RecordShardName(1, 3));
  auto set = RecordSet::Open(dir);
  EXPECT_TRUE(absl::IsFailedPrecondition(set.status())) << set.status();
}

TEST_F(DataFilesTest, AnUnfinishedWriterLeavesNoFile) {
  RecordHeader h;
  h.record_size = 4;
  h.record_count = h.total_records = 2;
  const std::string path = (dir_ / "x.rec").string();
  {
    auto writer = RecordWriter::Create(path, h);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Append(Payload(0, 4)).ok());
    EXPECT_TRUE(absl::IsFailedPrecondition((*writer)->Finish()));
  }
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(fs::exists(path + ".partial"));
}

// An idx file of bytes with the given dims, gzipped or not.
void WriteIdx(const std::string& path, const std::vector<uint32_t>& dims,
              const std::vector<uint8_t>& values, bool gzip) {
  std::string bytes = {0, 0, 8, static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift : {24, 16, 8, 0})
      bytes.push_back(static_cast<char>(d >> shift));
  }
  bytes.append(values.begin(), values.end());
  if (gzip) {
    gzFile file = gzopen(path.c_str(), "wb");
    gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(file);
  } else {
    std::ofstream(path, std::ios::binary) << bytes;
  }
}

TEST_F(DataFilesTest, IdxFilesReadGzippedOrPlain) {
  std::vector<uint8_t> values(3 * 4 * 5);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<uint8_t>(i);
  for (bool gzip : {false, true}) {
    const std::string path = (dir_ / (gzip ? "a.gz" : "a")).string();
    WriteIdx(path, {3, 4, 5}, values, gzip);
    auto array = ReadIdxFile(path);
    ASSERT_TRUE(array.ok()) << array.status();
    EXPECT_EQ(array->dims, (std::vector<uint32_t>{3, 4, 5}));
    EXPECT_EQ(array->values, values);
  }
}

TEST_F(DataFilesTest, ATruncatedIdxFileNamesTheOffset) {
  std::vector<uint8_t> values(3 * 4 * 5, 7);
  values.resize(50);  // 10 bytes short
  const std::string path = (dir_ / "short.gz").string();
  WriteIdx(path, {3, 4, 5}, values, true);
  auto array = ReadIdxFile(path);
  ASSERT_TRUE(absl::IsDataLoss(array.status())) << array.status();
  EXPECT_NE(array.status().message().find(path + ": offset 66"),
            std::string::npos)
      << array.status();
  EXPECT_TRUE(absl::IsNotFound(ReadIdxFile((dir_ / "none").string()).status()));
}

TEST_F(DataFilesTest, DebianFashionMnistHasTheDocumentedShape) {
  if (!fs::exists(kDefaultFashionMnistDir)) {
    GTEST_SKIP() << kDefaultFashionMnistDir
                 << " is absent (Debian package dataset-fashion-mnist)";
  }
  auto train = ReadFashionMnist(kDefaultFashionMnistDir, "train");
  auto test = ReadFashionMnist(kDefaultFashionMnistDir, "test");
  ASSERT_TRUE(train.ok()) << train.status();
  ASSERT_TRUE(test.ok()) << test.status();
  EXPECT_EQ(train->size(), 60000u);
  EXPECT_EQ(test->size(), 10000u);
  EXPECT_EQ(train->rows, 28u);
  EXPECT_EQ(train->cols, 28u);
  EXPECT_EQ(train->pixels.size(), 60000u * 28 * 28);
  std::vector<int> per_class(10);
  for (uint8_t label : test->labels) {
    ASSERT_LT(label, 10);
    ++per_class[label];
  }
  for (int count : per_class) EXPECT_EQ(count, 1000);  // balanced test set
}

}  // namespace
}  // namespace shard::trainer::data
