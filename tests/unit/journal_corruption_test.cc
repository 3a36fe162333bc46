// The journal corruption matrix: for every record of a small journal that
// holds every update type, damage each field (length, checksum, update type,
// payload), cut a record short, or repeat it. Recovery must either rebuild
// exactly the acknowledged history or refuse with DATA_LOSS; it never starts
// with less (or other) state. A file cut inside its last record is the
// one damage that recovery accepts as a torn write: that record was never
// acknowledged.
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/storage/record_codec.h"
#include "server/storage/state_log.h"
#include "tests/support/durable_append.h"
#include "tests/support/state_updates.h"

namespace shard::storage {
namespace {

using shard::state::v1::StateUpdate;
using namespace shard::testing;  // NOLINT: the update builders.

std::vector<StateUpdate> History() {
  return {Created("j", NormalSpec(100, 2, 1, 2)),
          Joined("j", "a"),
          Joined("j", "b"),
          Formed("j", 1, {"a", "b"}),
          Committed("j", 0, 10),
          Created("k", NormalSpec(7, 1)),
          Deleted("k"),
          Committed("j", 0, 20),
          Removed("j", "b"),
          Joined("j", "c"),
          Formed("j", 2, {"a", "c"}, 0, 20)};
}

// The serialised state after the first `count` updates of History().
std::string StateAfter(size_t count) {
  server::CoordinatorState state;
  for (size_t i = 0; i < count; ++i) {
    EXPECT_TRUE(state.Apply(History()[i]).ok());
  }
  return state.ToSnapshot(0).SerializeAsString();
}

class JournalCorruptionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/journal-corruption-XXXXXX";
    dir_ = mkdtemp(pattern);
    {
      absl::StatusOr<OpenedLog> opened =
          StateLog::Open(PosixFileSystem(), dir_);
      ASSERT_TRUE(opened.ok()) << opened.status();
      for (const StateUpdate& update : History()) {
        ASSERT_TRUE(shard::testing::AppendDurably(*opened->log, update).ok());
        ASSERT_TRUE(opened->state.Apply(update).ok());
      }
    }
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      segment_ = entry.path().filename().string();
    }
    journal_ = *PosixFileSystem()->ReadFile(Path());
    absl::StatusOr<DecodedRecords> records = DecodeRecords(journal_);
    ASSERT_TRUE(records.ok());
    ASSERT_EQ(records->offsets.size(), History().size());
    offsets_ = records->offsets;
    offsets_.push_back(journal_.size());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path() const { return absl::StrCat(dir_, "/", segment_); }

  // Recovers from `bytes` as the only segment, as shardd starts.
  absl::StatusOr<std::string> RecoverFrom(const std::string& bytes) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directory(dir_);
    EXPECT_TRUE(PosixFileSystem()->WriteFileAtomically(Path(), bytes).ok());
    absl::StatusOr<OpenedLog> opened = StateLog::Open(PosixFileSystem(), dir_);
    if (!opened.ok()) return opened.status();
    return opened->state.ToSnapshot(0).SerializeAsString();
  }

  std::string dir_;
  std::string segment_;
  std::string journal_;
  std::vector<uint64_t> offsets_;  // Of each record, then the end.
};

struct Damage {
  std::string name;
  // Returns the damaged journal given the record's [begin, end).
  std::function<std::string(std::string, uint64_t, uint64_t)> apply;
  // On the last record this damage is exactly a torn write (tested by
  // CutInsideTheLastRecordDropsOnlyThatRecord), so it is skipped there.
  bool torn_write_on_last = false;
};

std::string Flip(std::string bytes, uint64_t at, char mask) {
  bytes[at] ^= mask;
  return bytes;
}

// Offset of the update's type tag within a record's payload: the
// JournalRecord is `08 <sequence varint> 12 <length varint> <type tag>`.
uint64_t TypeTagOffset(const std::string& bytes, uint64_t begin) {
  uint64_t at = begin + kRecordHeaderBytes + 1;
  while (bytes[at] & 0x80) ++at;  // Sequence varint.
  at += 2;                        // Its last byte, then the 0x12 tag.
  while (bytes[at] & 0x80) ++at;  // Length varint.
  return at + 1;
}

std::vector<Damage> Damages() {
  std::vector<Damage> all;
  for (int byte = 0; byte < 4; ++byte) {
    for (char mask : {char{0x01}, char{0x10}, static_cast<char>(0x80)}) {
      all.push_back(
          {absl::StrCat("length byte ", byte, " ^ ", int(mask & 0xff)),
           [byte, mask](std::string b, uint64_t begin, uint64_t) {
             return Flip(std::move(b), begin + byte, mask);
           }});
    }
    all.push_back({absl::StrCat("checksum byte ", byte),
                   [byte](std::string b, uint64_t begin, uint64_t) {
                     return Flip(std::move(b), begin + 4 + byte, 0x01);
                   }});
  }
  all.push_back({"update type", [](std::string b, uint64_t begin, uint64_t) {
                   const uint64_t at = TypeTagOffset(b, begin);
                   return Flip(std::move(b), at, 0x08);  // Another field.
                 }});
  all.push_back(
      {"first payload byte", [](std::string b, uint64_t begin, uint64_t) {
         return Flip(std::move(b), begin + kRecordHeaderBytes, 0x04);
       }});
  all.push_back(
      {"middle payload byte", [](std::string b, uint64_t begin, uint64_t end) {
         const uint64_t payload = begin + kRecordHeaderBytes;
         return Flip(std::move(b), payload + (end - payload) / 2, 0x40);
       }});
  all.push_back(
      {"last payload byte", [](std::string b, uint64_t, uint64_t end) {
         return Flip(std::move(b), end - 1, 0x02);
       }});
  all.push_back({"record cut short by one byte",
                 [](std::string b, uint64_t, uint64_t end) {
                   return b.erase(end - 1, 1);
                 },
                 /*torn_write_on_last=*/true});
  all.push_back(
      {"record repeated", [](std::string b, uint64_t begin, uint64_t end) {
         return b.insert(end, b.substr(begin, end - begin));
       }});
  return all;
}

TEST_F(JournalCorruptionTest, EveryDamageRecoversExactlyOrIsRefused) {
  const std::string full = StateAfter(History().size());
  int refused = 0, exact = 0;
  for (size_t record = 0; record + 1 < offsets_.size(); ++record) {
    for (const Damage& damage : Damages()) {
      if (damage.torn_write_on_last && record + 2 == offsets_.size()) continue;
      const std::string bytes =
          damage.apply(journal_, offsets_[record], offsets_[record + 1]);
      absl::StatusOr<std::string> state = RecoverFrom(bytes);
      const std::string where =
          absl::StrCat(damage.name, " of record ", record + 1);
      if (state.ok()) {
        EXPECT_EQ(*state, full) << where << " started with other state";
        ++exact;
      } else {
        EXPECT_EQ(state.status().code(), absl::StatusCode::kDataLoss)
            << where << ": " << state.status();
        ++refused;
        // The evidence is left as it was.
        EXPECT_EQ(*PosixFileSystem()->ReadFile(Path()), bytes) << where;
      }
    }
  }
  EXPECT_GT(refused, 0);
  std::cout << "corruption matrix: " << refused + exact << " cases, " << refused
            << " refused with DATA_LOSS, " << exact << " recovered exactly\n";
}

TEST_F(JournalCorruptionTest, CutInsideTheLastRecordDropsOnlyThatRecord) {
  const std::string before_last = StateAfter(History().size() - 1);
  const uint64_t last = offsets_[offsets_.size() - 2];
  for (uint64_t cut = last + 1; cut < journal_.size(); ++cut) {
    absl::StatusOr<std::string> state = RecoverFrom(journal_.substr(0, cut));
    ASSERT_TRUE(state.ok()) << cut << ": " << state.status();
    EXPECT_EQ(*state, before_last) << cut;
  }
}

TEST_F(JournalCorruptionTest, IntactAndZeroPaddedJournalsRecoverExactly) {
  const std::string full = StateAfter(History().size());
  EXPECT_EQ(*RecoverFrom(journal_), full);
  EXPECT_EQ(*RecoverFrom(journal_ + std::string(512, '\0')), full);
}

}  // namespace
}  // namespace shard::storage
