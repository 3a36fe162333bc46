#include "server/storage/state_log.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "server/storage/record_codec.h"
#include "tests/support/blocking_coordinator.h"
#include "tests/support/durable_append.h"
#include "tests/support/fault_injecting_file_system.h"
#include "tests/support/state_updates.h"

namespace shard::storage {
namespace {

using shard::state::v1::StateUpdate;
using shard::testing::Created;
using shard::testing::Joined;
using shard::testing::NormalSpec;

StateUpdate JobCreated(const std::string& id) {
  return Created(id, NormalSpec(10, 1));
}

std::string ReadAll(const std::string& path) {
  return *PosixFileSystem()->ReadFile(path);
}

void WriteAll(const std::string& path, const std::string& bytes) {
  ASSERT_TRUE(PosixFileSystem()->WriteFileAtomically(path, bytes).ok());
}

class StateLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/state-log-test-XXXXXX";
    dir_ = mkdtemp(pattern);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  absl::StatusOr<OpenedLog> Open(uint64_t snapshot_every = 1000) {
    StateLogOptions options;
    options.snapshot_every = snapshot_every;
    return StateLog::Open(&fs_, dir_, options);
  }

  // Appends JobCreated(prefix + i) for i in [0, count) and applies it.
  void AppendJobs(OpenedLog& opened, const std::string& prefix, int count) {
    for (int i = 0; i < count; ++i) {
      const StateUpdate update = JobCreated(absl::StrCat(prefix, i));
      ASSERT_TRUE(shard::testing::AppendDurably(*opened.log, update).ok());
      ASSERT_TRUE(opened.state.Apply(update).ok());
      opened.log->MaybeSnapshot(opened.state);
    }
  }

  std::string OnlySegment() {
    std::string found;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      if (entry.path().filename().string().rfind("journal-", 0) == 0) {
        EXPECT_TRUE(found.empty()) << "more than one segment";
        found = entry.path().string();
      }
    }
    return found;
  }

  std::string dir_;
  testing::FaultInjectingFileSystem fs_;
};

TEST_F(StateLogTest, AppendThenReplayRebuildsTheState) {
  {
    absl::StatusOr<OpenedLog> opened = Open();
    ASSERT_TRUE(opened.ok()) << opened.status();
    AppendJobs(*opened, "job", 3);
  }
  absl::StatusOr<OpenedLog> reopened = Open();
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ(reopened->stats.replayed_records, 3u);
  EXPECT_EQ(reopened->state.jobs().size(), 3u);
  EXPECT_NE(reopened->state.FindJob("job2"), nullptr);
  EXPECT_EQ(reopened->log->last_sequence(), 3u);
}

TEST_F(StateLogTest, WhenDurableAnswersAfterTheFsyncThatCoversTheRecord) {
  absl::StatusOr<OpenedLog> opened = Open();
  ASSERT_TRUE(opened.ok()) << opened.status();
  StateLog& log = *opened->log;
  fs_.DelaySyncs(absl::Milliseconds(300));
  absl::StatusOr<uint64_t> sequence = log.Enqueue(JobCreated("a"));
  ASSERT_TRUE(sequence.ok());
  absl::Notification durable;
  absl::Status answered = absl::UnknownError("not answered");
  log.WhenDurable(*sequence, [&](absl::Status status) {
    answered = status;
    durable.Notify();
  });
  // The fsync takes 300 ms: the answer cannot be there yet.
  EXPECT_FALSE(durable.HasBeenNotified());
  ASSERT_TRUE(durable.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(answered.ok()) << answered;
  fs_.DelaySyncs(absl::ZeroDuration());
  // Already durable: answered at once, on this thread.
  bool inline_answer = false;
  log.WhenDurable(*sequence,
                  [&](absl::Status status) { inline_answer = status.ok(); });
  EXPECT_TRUE(inline_answer);
}

TEST_F(StateLogTest, WhenDurableAnswersTheErrorOfALogThatBroke) {
  absl::StatusOr<OpenedLog> opened = Open();
  ASSERT_TRUE(opened.ok()) << opened.status();
  StateLog& log = *opened->log;
  fs_.FailSyncs(1);
  absl::StatusOr<uint64_t> sequence = log.Enqueue(JobCreated("a"));
  ASSERT_TRUE(sequence.ok());
  absl::Notification answered;
  absl::Status status;
  log.WhenDurable(*sequence, [&](absl::Status s) {
    status = s;
    answered.Notify();
  });
  ASSERT_TRUE(answered.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  // Later records are refused, and a wait for one answers at once.
  EXPECT_FALSE(log.Enqueue(JobCreated("b")).ok());
  absl::Status later;
  log.WhenDurable(*sequence + 1, [&](absl::Status s) { later = s; });
  EXPECT_EQ(later.code(), absl::StatusCode::kUnavailable) << later;
}

TEST_F(StateLogTest, SnapshotsBoundReplayAndRemoveOldSegments) {
  {
    absl::StatusOr<OpenedLog> opened = Open(/*snapshot_every=*/4);
    ASSERT_TRUE(opened.ok());
    AppendJobs(*opened, "job", 10);  // Snapshots after 4 and 8.
    opened->log->Flush();
    EXPECT_GT(opened->log->snapshot_bytes(), 0u);
  }
  absl::StatusOr<OpenedLog> reopened = Open(4);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ(reopened->stats.snapshot_sequence, 8u);
  EXPECT_EQ(reopened->stats.replayed_records, 2u);
  EXPECT_EQ(reopened->state.jobs().size(), 10u);
  OnlySegment();  // Older segments were removed.
}

TEST_F(StateLogTest, TornTailIsDroppedAndAppendsContinue) {
  {
    absl::StatusOr<OpenedLog> opened = Open();
    ASSERT_TRUE(opened.ok());
    AppendJobs(*opened, "job", 2);
  }
  // Half of a third record, as a crash in the middle of write() leaves it.
  const std::string record = EncodeRecord("a record that never finished");
  {
    auto file = *PosixFileSystem()->OpenAppendable(OnlySegment());
    ASSERT_TRUE(file->Append(record.substr(0, record.size() / 2)).ok());
  }
  const std::string segment = OnlySegment();
  const uint64_t whole = ReadAll(segment).size() - record.size() / 2;
  {
    absl::StatusOr<OpenedLog> opened = Open();
    ASSERT_TRUE(opened.ok()) << opened.status();
    EXPECT_TRUE(opened->stats.dropped_torn_tail);
    EXPECT_EQ(opened->state.jobs().size(), 2u);
    AppendJobs(*opened, "more", 1);
  }
  // The dropped bytes are kept beside the journal.
  EXPECT_EQ(ReadAll(absl::StrCat(segment, ".torn-", whole)),
            record.substr(0, record.size() / 2));
  absl::StatusOr<OpenedLog> reopened = Open();
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_FALSE(reopened->stats.dropped_torn_tail);
  EXPECT_EQ(reopened->state.jobs().size(), 3u);
}

TEST_F(StateLogTest, CorruptRecordInTheMiddleIsRefused) {
  {
    absl::StatusOr<OpenedLog> opened = Open();
    ASSERT_TRUE(opened.ok());
    AppendJobs(*opened, "job", 3);
  }
  const std::string path = OnlySegment();
  std::string bytes = ReadAll(path);
  const size_t first_record = bytes.size() / 3;
  bytes[first_record + kRecordHeaderBytes + 2] ^= 0x55;  // Inside record 2.
  WriteAll(path, bytes);
  absl::StatusOr<OpenedLog> reopened = Open();
  ASSERT_FALSE(reopened.ok());
  EXPECT_EQ(reopened.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(reopened.status().message().find(absl::StrCat(
                "record 2 at byte offset ", first_record, " is corrupt")),
            std::string::npos)
      << reopened.status();
  EXPECT_EQ(ReadAll(path), bytes);  // Evidence untouched.
}

// One flipped length byte in the middle of the journal used to read as a
// torn tail: history silently cut back and the journal truncated.
TEST_F(StateLogTest, LengthRunningPastTheEndWithRecordsAfterItIsRefused) {
  {
    absl::StatusOr<OpenedLog> opened = Open();
    ASSERT_TRUE(opened.ok());
    AppendJobs(*opened, "job", 50);
  }
  const std::string path = OnlySegment();
  const std::string intact = ReadAll(path);
  absl::StatusOr<DecodedRecords> records = DecodeRecords(intact);
  ASSERT_TRUE(records.ok());
  std::string bytes = intact;
  bytes[records->offsets[10] + 2] ^= 0x01;  // Record 11's length += 65536.
  WriteAll(path, bytes);
  absl::StatusOr<OpenedLog> reopened = Open();
  ASSERT_FALSE(reopened.ok())
      << "started with " << reopened->state.jobs().size() << " jobs";
  EXPECT_EQ(reopened.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(reopened.status().message().find(
                absl::StrCat("offset ", records->offsets[10])),
            std::string::npos)
      << reopened.status();
  EXPECT_EQ(ReadAll(path), bytes);  // Not truncated.
}

TEST_F(StateLogTest, ZeroFilledTailIsATornTail) {
  {
    absl::StatusOr<OpenedLog> opened = Open();
    ASSERT_TRUE(opened.ok());
    AppendJobs(*opened, "job", 3);
  }
  const std::string path = OnlySegment();
  WriteAll(path, ReadAll(path) + std::string(4096, '\0'));
  absl::StatusOr<OpenedLog> reopened = Open();
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_TRUE(reopened->stats.dropped_torn_tail);
  EXPECT_EQ(reopened->state.jobs().size(), 3u);
}

// The last record was written whole, so it was acknowledged: damage to it
// is corruption, not a torn write.
TEST_F(StateLogTest, DamagedCompleteLastRecordIsRefused) {
  {
    absl::StatusOr<OpenedLog> opened = Open();
    ASSERT_TRUE(opened.ok());
    AppendJobs(*opened, "job", 3);
  }
  const std::string path = OnlySegment();
  std::string bytes = ReadAll(path);
  bytes[bytes.size() - 1] ^= 0x20;
  WriteAll(path, bytes);
  absl::StatusOr<OpenedLog> reopened = Open();
  ASSERT_FALSE(reopened.ok());
  EXPECT_EQ(reopened.status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(StateLogTest, RepeatedRecordIsRefused) {
  {
    absl::StatusOr<OpenedLog> opened = Open();
    ASSERT_TRUE(opened.ok());
    AppendJobs(*opened, "job", 3);
  }
  const std::string path = OnlySegment();
  const std::string bytes = ReadAll(path);
  absl::StatusOr<DecodedRecords> records = DecodeRecords(bytes);
  ASSERT_TRUE(records.ok());
  const std::string second = bytes.substr(
      records->offsets[1], records->offsets[2] - records->offsets[1]);
  WriteAll(path, bytes + second);
  absl::StatusOr<OpenedLog> reopened = Open();
  ASSERT_FALSE(reopened.ok());
  EXPECT_EQ(reopened.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(reopened.status().message().find("has sequence 2 where 4"),
            std::string::npos)
      << reopened.status();
}

// A record that passes its checksum but does not fit the state (here a
// member joining a job that does not exist) stops recovery with DATA_LOSS
// naming the file and offset; it never aborts the process.
TEST_F(StateLogTest, ChecksummedRecordThatDoesNotFitTheStateIsRefused) {
  {
    absl::StatusOr<OpenedLog> opened = Open();
    ASSERT_TRUE(opened.ok());
    AppendJobs(*opened, "job", 2);
    ASSERT_TRUE(
        shard::testing::AppendDurably(*opened->log, Joined("missing", "a"))
            .ok());
  }
  const std::string path = OnlySegment();
  absl::StatusOr<DecodedRecords> records = DecodeRecords(ReadAll(path));
  ASSERT_TRUE(records.ok());
  absl::StatusOr<Recovered> checked = Recover(&fs_, dir_, RecoveryMode::kCheck);
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(checked.status().message().find(
                absl::StrCat(path, ": record at byte offset ",
                             records->offsets[2], " does not fit")),
            std::string::npos)
      << checked.status();
  EXPECT_EQ(Open().status().code(), absl::StatusCode::kDataLoss);
}

TEST_F(StateLogTest, StraySegmentNameIsRefusedByName) {
  {
    absl::StatusOr<OpenedLog> opened = Open();
    ASSERT_TRUE(opened.ok());
    AppendJobs(*opened, "job", 1);
  }
  WriteAll(absl::StrCat(dir_, "/journal-5.log"), "");
  absl::StatusOr<OpenedLog> reopened = Open();
  ASSERT_FALSE(reopened.ok());
  EXPECT_NE(reopened.status().message().find("unexpected file journal-5.log"),
            std::string::npos)
      << reopened.status();
}

// A segment named after its first record: losing the end of an older
// segment shows as a gap before the next one.
TEST_F(StateLogTest, GapBetweenSegmentsIsRefused) {
  {
    absl::StatusOr<OpenedLog> opened = Open(/*snapshot_every=*/1000);
    ASSERT_TRUE(opened.ok());
    AppendJobs(*opened, "job", 3);
  }
  // A later segment starting at 5: record 4 is missing.
  shard::state::v1::JournalRecord record;
  record.set_sequence(5);
  *record.mutable_update() = JobCreated("late");
  WriteAll(absl::StrCat(dir_, "/journal-00000000000000000005.log"),
           EncodeRecord(record.SerializeAsString()));
  absl::StatusOr<OpenedLog> reopened = Open();
  ASSERT_FALSE(reopened.ok());
  EXPECT_EQ(reopened.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(reopened.status().message().find("starts at sequence 5"),
            std::string::npos)
      << reopened.status();
}

// --check-data-dir's mode reads and reports but changes nothing, not even a
// torn tail.
TEST_F(StateLogTest, CheckModeChangesNothing) {
  {
    absl::StatusOr<OpenedLog> opened = Open();
    ASSERT_TRUE(opened.ok());
    AppendJobs(*opened, "job", 2);
  }
  const std::string path = OnlySegment();
  const std::string torn =
      ReadAll(path) + EncodeRecord("unfinished").substr(0, 5);
  WriteAll(path, torn);
  absl::StatusOr<Recovered> checked = Recover(&fs_, dir_, RecoveryMode::kCheck);
  ASSERT_TRUE(checked.ok()) << checked.status();
  EXPECT_TRUE(checked->stats.dropped_torn_tail);
  EXPECT_EQ(checked->state.jobs().size(), 2u);
  EXPECT_EQ(ReadAll(path), torn);
}

TEST_F(StateLogTest, AcknowledgedUpdatesSurviveACrash) {
  {
    absl::StatusOr<OpenedLog> opened = Open();
    ASSERT_TRUE(opened.ok());
    AppendJobs(*opened, "job", 5);
  }
  fs_.SimulateCrash();
  absl::StatusOr<OpenedLog> reopened = Open();
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ(reopened->state.jobs().size(), 5u);
}

// The service journals before it applies and answers: when the fsync fails
// the request fails, nothing is applied, and later mutations are refused
// (what reached the disk is unknown) until a restart recovers.
// After a failed fsync the state in memory may be ahead of the disk: the
// request fails, every later call (reads included) answers UNAVAILABLE, and
// recovery finds exactly the acknowledged updates.
TEST_F(StateLogTest, FailedFsyncFailsTheRequestAndEveryLaterCall) {
  StateLogOptions options;
  int broken_reports = 0;
  options.on_broken = [&broken_reports](const absl::Status&) {
    ++broken_reports;
  };
  absl::StatusOr<OpenedLog> opened = StateLog::Open(&fs_, dir_, options);
  ASSERT_TRUE(opened.ok());
  {
    testing::BlockingCoordinator service({}, *std::move(opened));
    shard::v1::CreateJobRequest create;
    create.set_job_id("first");
    create.mutable_spec()->set_dataset_size(10);
    create.mutable_spec()->set_world_size(1);
    ASSERT_TRUE(service.CreateJob(create).ok());

    fs_.FailSyncs(1);
    create.set_job_id("second");
    absl::StatusOr<shard::v1::Job> failed = service.CreateJob(create);
    ASSERT_FALSE(failed.ok());
    EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
    shard::v1::GetJobRequest get;
    get.set_job_id("first");
    EXPECT_EQ(service.GetJob(get).status().code(),
              absl::StatusCode::kUnavailable);
    create.set_job_id("third");
    EXPECT_EQ(service.CreateJob(create).status().code(),
              absl::StatusCode::kUnavailable);
  }
  EXPECT_EQ(broken_reports, 1);

  fs_.SimulateCrash();
  absl::StatusOr<OpenedLog> recovered = Open();
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_NE(recovered->state.FindJob("first"), nullptr);
  EXPECT_EQ(recovered->state.FindJob("second"), nullptr);
}

// Records queued while an fsync runs are made durable together by the next
// one: a slow disk costs each update one fsync wait, not one per update
// queued before it.
TEST_F(StateLogTest, RecordsQueuedDuringAnFsyncShareTheNextOne) {
  absl::StatusOr<OpenedLog> opened = Open();
  ASSERT_TRUE(opened.ok());
  fs_.DelaySyncs(absl::Seconds(1));
  const int syncs_before = fs_.syncs();
  uint64_t last = 0;
  for (int i = 0; i < 50; ++i) {
    absl::StatusOr<uint64_t> sequence =
        opened->log->Enqueue(JobCreated(absl::StrCat("job", i)));
    ASSERT_TRUE(sequence.ok()) << sequence.status();
    last = *sequence;
  }
  ASSERT_TRUE(shard::testing::AwaitDurable(*opened->log, last).ok());
  // The first record may go out alone; the other 49 were queued while its
  // fsync slept.
  EXPECT_LE(fs_.syncs() - syncs_before, 2);
  fs_.DelaySyncs(absl::ZeroDuration());
  opened->log.reset();
  absl::StatusOr<OpenedLog> reopened = Open();
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ(reopened->state.jobs().size(), 50u);
}

// A crash after the last MemberJoined was journaled but before the
// GenerationFormed it allows: the recovered service forms the world.
TEST_F(StateLogTest, RecoveryFormsAWorldLeftUnformedByACrash) {
  {
    absl::StatusOr<OpenedLog> opened = Open();
    ASSERT_TRUE(opened.ok());
    ASSERT_TRUE(shard::testing::AppendDurably(*opened->log,
                                              Created("job", NormalSpec(10, 2)))
                    .ok());
    for (const char* member : {"a", "b"}) {
      StateUpdate joined;
      joined.mutable_member_joined()->set_job_id("job");
      joined.mutable_member_joined()->set_member_id(member);
      ASSERT_TRUE(shard::testing::AppendDurably(*opened->log, joined).ok());
    }
  }
  absl::StatusOr<OpenedLog> reopened = Open();
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_FALSE(reopened->state.FindJob("job")->world_formed());
  server::CoordinatorOptions options;
  options.expire_leases_in_background = false;
  testing::BlockingCoordinator service(options, *std::move(reopened));
  shard::v1::GetJobRequest get;
  get.set_job_id("job");
  EXPECT_EQ(service.GetJob(get)->generation(), 1u);
  EXPECT_EQ(service.GetJob(get)->current_world_size(), 2u);
}

TEST(RecordCodecTest, RoundTrips) {
  const std::string data = EncodeRecord("alpha") + EncodeRecord("b") +
                           EncodeRecord(std::string(1000, 'z'));
  absl::StatusOr<DecodedRecords> decoded = DecodeRecords(data);
  ASSERT_TRUE(decoded.ok());
  ASSERT_EQ(decoded->payloads.size(), 3u);
  EXPECT_EQ(decoded->payloads[0], "alpha");
  EXPECT_EQ(decoded->payloads[1], "b");
  EXPECT_EQ(decoded->payloads[2], std::string(1000, 'z'));
  EXPECT_EQ(decoded->offsets, (std::vector<uint64_t>{0, 13, 22}));
  EXPECT_EQ(decoded->valid_bytes, data.size());
  EXPECT_FALSE(decoded->torn_tail);
}

// Cutting the data anywhere inside its last record is what a crash during
// that record's write leaves: a torn tail holding exactly the records
// before it.
TEST(RecordCodecTest, CutInsideTheLastRecordIsATornTail) {
  const std::string head = EncodeRecord("alpha") + EncodeRecord("b");
  const std::string data = head + EncodeRecord(std::string(1000, 'z'));
  for (size_t cut = head.size() + 1; cut < data.size(); ++cut) {
    absl::StatusOr<DecodedRecords> torn = DecodeRecords(data.substr(0, cut));
    ASSERT_TRUE(torn.ok()) << cut << ": " << torn.status();
    EXPECT_TRUE(torn->torn_tail) << cut;
    EXPECT_EQ(torn->payloads.size(), 2u) << cut;
    EXPECT_EQ(torn->valid_bytes, head.size()) << cut;
  }
}

TEST(RecordCodecTest, ImplausibleHeaderFollowedByDataIsCorruption) {
  std::string data = EncodeRecord("alpha") + EncodeRecord("beta");
  data[0] = data[1] = data[2] = data[3] = 0;  // Length 0: never written.
  EXPECT_EQ(DecodeRecords(data).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace shard::storage
