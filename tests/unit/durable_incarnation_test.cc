// Member incarnations are durable: after a coordinator restart (recovered
// from the journal alone, or from a snapshot), a member that re-joins from
// a restarted process still ends its generation, so its peers are told to
// re-join instead of blocking in collectives with a dead process. A stale
// process's Heartbeat or Leave (its old incarnation) is refused and changes
// nothing. Incarnations are kept only while the member stays joined. The
// rendezvous keys live in memory: a recovered generation's store calls
// answer ABORTED instead of waiting for lost keys, and a member of that
// world joining again renews it, so its process group forms afresh.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "common/storage/file_system.h"
#include "gtest/gtest.h"
#include "server/storage/state_log.h"
#include "tests/support/blocking_coordinator.h"

namespace shard::server {
namespace {

constexpr uint64_t kOld = 101;  // Incarnation of b's first process.
constexpr uint64_t kNew = 202;  // Its restarted process.

class DurableIncarnationTest : public ::testing::TestWithParam<uint64_t> {
 protected:
  void SetUp() override {
    // One directory per test and parameter: ctest runs tests in parallel.
    std::string name =
        ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '-');
    dir_ = (std::filesystem::path(::testing::TempDir()) /
            ("durable-incarnation-" + name + "-" + std::to_string(getpid())))
               .string();
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A coordinator over dir_; the parameter is the journal records between
  // snapshots (1: recovery reads a snapshot holding the members).
  std::unique_ptr<testing::BlockingCoordinator> Start() {
    storage::StateLogOptions log_options;
    log_options.snapshot_every = GetParam();
    absl::StatusOr<storage::OpenedLog> opened =
        storage::StateLog::Open(storage::PosixFileSystem(), dir_, log_options);
    EXPECT_TRUE(opened.ok()) << opened.status();
    CoordinatorOptions options;
    options.expire_leases_in_background = false;
    return std::make_unique<testing::BlockingCoordinator>(options,
                                                          *std::move(opened));
  }

  static shard::v1::JoinJobRequest JoinRequest(const std::string& member,
                                               uint64_t incarnation) {
    shard::v1::JoinJobRequest request;
    request.set_job_id("job");
    request.set_member_id(member);
    request.set_incarnation(incarnation);
    request.set_wait_for_world_ms(10000);
    request.mutable_spec()->set_dataset_size(100);
    request.mutable_spec()->set_world_size(2);
    return request;
  }

  // Joins a (incarnation 11) and b (kOld) and returns the generation.
  static uint64_t FormWorld(testing::BlockingCoordinator& service) {
    absl::StatusOr<shard::v1::JoinJobResponse> a, b;
    std::thread join_a([&] {
      a = service.JoinJob(JoinRequest("a", 11), absl::InfiniteFuture());
    });
    b = service.JoinJob(JoinRequest("b", kOld), absl::InfiniteFuture());
    join_a.join();
    EXPECT_TRUE(a.ok() && b.ok());
    EXPECT_TRUE(b->world_formed());
    return b->generation();
  }

  static absl::Status Heartbeat(testing::BlockingCoordinator& service,
                                const std::string& member, uint64_t generation,
                                uint64_t incarnation) {
    shard::v1::HeartbeatRequest request;
    request.set_job_id("job");
    request.set_member_id(member);
    request.set_generation(generation);
    request.set_incarnation(incarnation);
    return service.Heartbeat(request).status();
  }

  static absl::Status Leave(testing::BlockingCoordinator& service,
                            const std::string& member, uint64_t incarnation) {
    shard::v1::LeaveRequest request;
    request.set_job_id("job");
    request.set_member_id(member);
    request.set_incarnation(incarnation);
    return service.Leave(request).status();
  }

  static shard::v1::Job Job(testing::BlockingCoordinator& service) {
    shard::v1::GetJobRequest get;
    get.set_job_id("job");
    return *service.GetJob(get);
  }

  std::string dir_;
};

TEST_P(DurableIncarnationTest, ARestartedMemberEndsItsGenerationAfterARestart) {
  uint64_t generation = 0;
  {
    std::unique_ptr<testing::BlockingCoordinator> first = Start();
    generation = FormWorld(*first);
  }
  std::unique_ptr<testing::BlockingCoordinator> restarted = Start();
  ASSERT_TRUE(Heartbeat(*restarted, "a", generation, 11).ok());
  // b's pod restarts: a new process joins under the same member id.
  absl::StatusOr<shard::v1::JoinJobResponse> rejoined = restarted->JoinJob(
      JoinRequest("b", kNew), absl::Now() + absl::Milliseconds(200));
  ASSERT_TRUE(rejoined.ok() || absl::IsDeadlineExceeded(rejoined.status()))
      << rejoined.status();
  // The old generation is over: a is told to re-join.
  const absl::Status beat = Heartbeat(*restarted, "a", generation, 11);
  EXPECT_TRUE(absl::IsAborted(beat)) << beat;
}

TEST_P(DurableIncarnationTest, ARecoveredGenerationsStoreAnswersAborted) {
  auto set = [](testing::BlockingCoordinator& service, uint64_t generation) {
    shard::v1::StoreSetRequest request;
    request.mutable_scope()->set_job_id("job");
    request.mutable_scope()->set_generation(generation);
    request.mutable_scope()->set_member_id("a");
    request.set_key("MASTER_ADDR");
    request.set_value("10.0.0.1");
    return service.store().StoreSet(request).status();
  };
  uint64_t generation = 0;
  {
    std::unique_ptr<testing::BlockingCoordinator> first = Start();
    generation = FormWorld(*first);
    ASSERT_TRUE(set(*first, generation).ok());
  }
  std::unique_ptr<testing::BlockingCoordinator> restarted = Start();
  shard::v1::StoreGetRequest get;
  get.mutable_scope()->set_job_id("job");
  get.mutable_scope()->set_generation(generation);
  get.mutable_scope()->set_member_id("a");
  get.set_key("MASTER_ADDR");
  get.set_wait_ms(60000);
  // Without the refusal this get would wait its full minute for a key the
  // restart lost.
  const absl::StatusOr<shard::v1::StoreGetResponse> got =
      restarted->StoreGet(get, absl::InfiniteFuture());
  EXPECT_TRUE(absl::IsAborted(got.status())) << got.status();
  EXPECT_TRUE(absl::IsAborted(set(*restarted, generation)));
  // The trainers re-join as both clients do on ABORTED, without leaving:
  // the new generation's store works.
  const uint64_t next = FormWorld(*restarted);
  EXPECT_GT(next, generation);
  EXPECT_TRUE(set(*restarted, next).ok());
}

TEST_P(DurableIncarnationTest, ReJoiningAWorldWhoseKeysWereLostRenewsIt) {
  uint64_t generation = 0;
  {
    std::unique_ptr<testing::BlockingCoordinator> first = Start();
    generation = FormWorld(*first);
  }
  std::unique_ptr<testing::BlockingCoordinator> restarted = Start();
  // The restart cut a's process group formation short: its store call was
  // ABORTED and it joins again, with the same process.
  const absl::StatusOr<shard::v1::JoinJobResponse> a =
      restarted->JoinJob(JoinRequest("a", 11), absl::InfiniteFuture());
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(a->world_formed());
  EXPECT_GT(a->generation(), generation);
  EXPECT_EQ(a->world_size(), 2u);
  // b learns of the renewed world at its next call and joins it.
  EXPECT_TRUE(absl::IsAborted(Heartbeat(*restarted, "b", generation, kOld)));
  const absl::StatusOr<shard::v1::JoinJobResponse> b =
      restarted->JoinJob(JoinRequest("b", kOld), absl::InfiniteFuture());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->generation(), a->generation());
  EXPECT_NE(b->rank(), a->rank());
  // Renewed once: joining the renewed world again changes nothing.
  const absl::StatusOr<shard::v1::JoinJobResponse> again =
      restarted->JoinJob(JoinRequest("a", 11), absl::InfiniteFuture());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->generation(), a->generation());
  EXPECT_TRUE(Heartbeat(*restarted, "b", b->generation(), kOld).ok());
}

TEST_P(DurableIncarnationTest, AStaleProcessCannotHeartbeatOrLeave) {
  {
    std::unique_ptr<testing::BlockingCoordinator> first = Start();
    FormWorld(*first);
  }
  std::unique_ptr<testing::BlockingCoordinator> restarted = Start();
  absl::StatusOr<shard::v1::JoinJobResponse> rejoined = restarted->JoinJob(
      JoinRequest("b", kNew), absl::Now() + absl::Milliseconds(200));
  ASSERT_TRUE(rejoined.ok() || absl::IsDeadlineExceeded(rejoined.status()));
  const shard::v1::Job before = Job(*restarted);
  // The old process of b, exiting cleanly after its replacement joined.
  EXPECT_TRUE(absl::IsFailedPrecondition(
      Heartbeat(*restarted, "b", before.generation(), kOld)));
  const absl::Status left = Leave(*restarted, "b", kOld);
  EXPECT_TRUE(absl::IsFailedPrecondition(left)) << left;
  EXPECT_NE(left.message().find("stale"), std::string::npos) << left;
  const shard::v1::Job after = Job(*restarted);
  EXPECT_EQ(after.joined_members(), before.joined_members());
  EXPECT_EQ(after.generation(), before.generation());
  // The replacement itself may leave.
  EXPECT_TRUE(Leave(*restarted, "b", kNew).ok());
  EXPECT_EQ(Job(*restarted).joined_members(), before.joined_members() - 1);
}

TEST_P(DurableIncarnationTest, ALeftMembersIncarnationIsForgotten) {
  {
    std::unique_ptr<testing::BlockingCoordinator> first = Start();
    FormWorld(*first);
    ASSERT_TRUE(Leave(*first, "b", kOld).ok());
  }
  // After b left, a new process joins as b: a fresh member, whose own
  // incarnation is now the current one.
  std::unique_ptr<testing::BlockingCoordinator> restarted = Start();
  absl::StatusOr<shard::v1::JoinJobResponse> joined = restarted->JoinJob(
      JoinRequest("b", kNew), absl::Now() + absl::Milliseconds(200));
  ASSERT_TRUE(joined.ok() || absl::IsDeadlineExceeded(joined.status()));
  EXPECT_EQ(Job(*restarted).joined_members(), 2u);
  EXPECT_TRUE(absl::IsFailedPrecondition(Leave(*restarted, "b", kOld)));
  EXPECT_TRUE(Leave(*restarted, "b", kNew).ok());
  EXPECT_EQ(Job(*restarted).joined_members(), 1u);
}

INSTANTIATE_TEST_SUITE_P(JournalAndSnapshot, DurableIncarnationTest,
                         ::testing::Values(uint64_t{10000}, uint64_t{1}));

}  // namespace
}  // namespace shard::server
