#include "server/storage/state_log.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/coordinator_service.h"
#include "server/storage/record_codec.h"
#include "tests/support/fault_injecting_file_system.h"

namespace shard::storage {
namespace {

using shard::state::v1::StateUpdate;

StateUpdate JobCreated(const std::string& id) {
  StateUpdate update;
  update.mutable_job_created()->set_job_id(id);
  update.mutable_job_created()->mutable_spec()->set_dataset_size(10);
  update.mutable_job_created()->mutable_spec()->set_world_size(1);
  return update;
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
      ASSERT_TRUE(opened.log->Append(update).ok());
      opened.state.Apply(update);
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

TEST_F(StateLogTest, SnapshotsBoundReplayAndRemoveOldSegments) {
  {
    absl::StatusOr<OpenedLog> opened = Open(/*snapshot_every=*/4);
    ASSERT_TRUE(opened.ok());
    AppendJobs(*opened, "job", 10);  // Snapshots after 4 and 8.
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
  {
    absl::StatusOr<OpenedLog> opened = Open();
    ASSERT_TRUE(opened.ok()) << opened.status();
    EXPECT_TRUE(opened->stats.dropped_torn_tail);
    EXPECT_EQ(opened->state.jobs().size(), 2u);
    AppendJobs(*opened, "more", 1);
  }
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
  std::string bytes = *PosixFileSystem()->ReadFile(path);
  const size_t first_record = bytes.size() / 3;
  bytes[first_record + kRecordHeaderBytes + 2] ^= 0x55;  // Inside record 2.
  ASSERT_TRUE(PosixFileSystem()->WriteFileAtomically(path, bytes).ok());
  absl::StatusOr<OpenedLog> reopened = Open();
  ASSERT_FALSE(reopened.ok());
  EXPECT_EQ(reopened.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(reopened.status().message().find("corrupt in the middle"),
            std::string::npos)
      << reopened.status();
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
TEST_F(StateLogTest, FailedFsyncFailsTheRequestAndAppliesNothing) {
  absl::StatusOr<OpenedLog> opened = Open();
  ASSERT_TRUE(opened.ok());
  server::CoordinatorService service({}, *std::move(opened));
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
  get.set_job_id("second");
  EXPECT_EQ(service.GetJob(get).status().code(), absl::StatusCode::kNotFound);
  create.set_job_id("third");
  EXPECT_EQ(service.CreateJob(create).status().code(),
            absl::StatusCode::kUnavailable);

  fs_.SimulateCrash();
  absl::StatusOr<OpenedLog> recovered = Open();
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_NE(recovered->state.FindJob("first"), nullptr);
  EXPECT_EQ(recovered->state.FindJob("second"), nullptr);
}

// A crash after the last MemberJoined was journaled but before the
// GenerationFormed it allows: the recovered service forms the world.
TEST_F(StateLogTest, RecoveryFormsAWorldLeftUnformedByACrash) {
  {
    absl::StatusOr<OpenedLog> opened = Open();
    ASSERT_TRUE(opened.ok());
    StateUpdate created = JobCreated("job");
    created.mutable_job_created()->mutable_spec()->set_world_size(2);
    created.mutable_job_created()->mutable_spec()->set_min_world_size(2);
    created.mutable_job_created()->mutable_spec()->set_max_world_size(2);
    ASSERT_TRUE(opened->log->Append(created).ok());
    for (const char* member : {"a", "b"}) {
      StateUpdate joined;
      joined.mutable_member_joined()->set_job_id("job");
      joined.mutable_member_joined()->set_member_id(member);
      ASSERT_TRUE(opened->log->Append(joined).ok());
    }
  }
  absl::StatusOr<OpenedLog> reopened = Open();
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_FALSE(reopened->state.FindJob("job")->world_formed());
  server::CoordinatorOptions options;
  options.expire_leases_in_background = false;
  server::CoordinatorService service(options, *std::move(reopened));
  shard::v1::GetJobRequest get;
  get.set_job_id("job");
  EXPECT_EQ(service.GetJob(get)->generation(), 1u);
  EXPECT_EQ(service.GetJob(get)->current_world_size(), 2u);
}

TEST(RecordCodecTest, RoundTripsAndDetectsDamage) {
  const std::string data = EncodeRecord("alpha") + EncodeRecord("") +
                           EncodeRecord(std::string(1000, 'z'));
  absl::StatusOr<DecodedRecords> decoded = DecodeRecords(data);
  ASSERT_TRUE(decoded.ok());
  ASSERT_EQ(decoded->payloads.size(), 3u);
  EXPECT_EQ(decoded->payloads[0], "alpha");
  EXPECT_EQ(decoded->payloads[1], "");
  EXPECT_EQ(decoded->valid_bytes, data.size());
  // Any truncation is a torn tail, never an error.
  for (size_t cut = 1; cut < data.size(); cut += 97) {
    absl::StatusOr<DecodedRecords> torn = DecodeRecords(data.substr(0, cut));
    ASSERT_TRUE(torn.ok()) << cut;
  }
}

}  // namespace
}  // namespace shard::storage
