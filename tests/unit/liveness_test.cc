// Members stay alive while the coordinator, not they, is slow: a join that
// waits for the other ranks, a stalled disk, a stalled coordinator process.
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "server/storage/state_log.h"
#include "tests/support/blocking_coordinator.h"
#include "tests/support/fault_injecting_file_system.h"

namespace shard::server {
namespace {

shard::v1::CreateJobRequest TwoRankJob() {
  shard::v1::CreateJobRequest request;
  request.set_job_id("job");
  request.mutable_spec()->set_dataset_size(100);
  request.mutable_spec()->set_world_size(2);
  return request;
}

shard::v1::JoinJobRequest JoinRequest(const std::string& member,
                                      uint32_t wait_ms) {
  shard::v1::JoinJobRequest request;
  request.set_job_id("job");
  request.set_member_id(member);
  request.set_wait_for_world_ms(wait_ms);
  return request;
}

shard::v1::HeartbeatRequest HeartbeatRequest(const std::string& member,
                                             uint64_t generation) {
  shard::v1::HeartbeatRequest request;
  request.set_job_id("job");
  request.set_member_id(member);
  request.set_generation(generation);
  return request;
}

uint32_t JoinedMembers(testing::BlockingCoordinator& service) {
  shard::v1::GetJobRequest get;
  get.set_job_id("job");
  return service.GetJob(get)->joined_members();
}

// Leases on a fake clock the test advances by hand.
class FakeClockLeaseTest : public ::testing::Test {
 protected:
  FakeClockLeaseTest() : service_(Options()) {}

  CoordinatorOptions Options() {
    CoordinatorOptions options;
    options.lease = absl::Seconds(10);
    options.expire_leases_in_background = false;
    options.now = [this] {
      absl::MutexLock lock(&clock_mu_);
      return now_;
    };
    return options;
  }

  void Advance(absl::Duration by) {
    absl::MutexLock lock(&clock_mu_);
    now_ += by;
  }

  absl::Mutex clock_mu_;
  absl::Time now_ ABSL_GUARDED_BY(clock_mu_) = absl::UnixEpoch();
  testing::BlockingCoordinator service_;
};

// Ranks of a cluster job start minutes apart (image pulls, scheduling): the
// first one's join must outlive many leases.
TEST_F(FakeClockLeaseTest, JoinWaitingLongerThanTheLeaseSucceeds) {
  ASSERT_TRUE(service_.CreateJob(TwoRankJob()).ok());
  absl::StatusOr<shard::v1::JoinJobResponse> first;
  std::thread waiter([&] {
    first = service_.JoinJob(JoinRequest("a", 60000), absl::InfiniteFuture());
  });
  while (JoinedMembers(service_) < 1) absl::SleepFor(absl::Milliseconds(1));
  for (int i = 0; i < 12; ++i) {  // Three leases.
    Advance(absl::Seconds(2.5));
    service_.ExpireLeases();
  }
  EXPECT_EQ(JoinedMembers(service_), 1u) << "the waiting member was evicted";
  absl::StatusOr<shard::v1::JoinJobResponse> second =
      service_.JoinJob(JoinRequest("b", 60000), absl::InfiniteFuture());
  waiter.join();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(first->world_formed());
  EXPECT_EQ(first->generation(), second->generation());
  // Once answered, the member is on its heartbeats again.
  Advance(absl::Seconds(11));
  service_.ExpireLeases();
  EXPECT_EQ(JoinedMembers(service_), 0u);
}

// Time during which the coordinator could not run is nobody's silence.
TEST_F(FakeClockLeaseTest, TimeTheCoordinatorWasStalledIsNotCounted) {
  ASSERT_TRUE(service_.CreateJob(TwoRankJob()).ok());
  ASSERT_TRUE(
      service_.JoinJob(JoinRequest("a", 0), absl::InfiniteFuture()).ok());
  ASSERT_TRUE(
      service_.JoinJob(JoinRequest("b", 0), absl::InfiniteFuture()).ok());
  Advance(absl::Seconds(30));
  service_.ExpireLeases(/*stalled=*/absl::Seconds(28));
  EXPECT_EQ(JoinedMembers(service_), 2u);
  Advance(absl::Seconds(9));  // 11 s of silence the coordinator could see.
  service_.ExpireLeases();
  EXPECT_EQ(JoinedMembers(service_), 0u);
}

// A one-rank job with a formed world in `service`; returns a store get of
// a key of its generation.
shard::v1::StoreGetRequest StoreGetOfOneRankJob(
    testing::BlockingCoordinator& service) {
  shard::v1::CreateJobRequest create = TwoRankJob();
  create.mutable_spec()->set_world_size(1);
  EXPECT_TRUE(service.CreateJob(create).ok());
  absl::StatusOr<shard::v1::JoinJobResponse> joined =
      service.JoinJob(JoinRequest("a", 0), absl::InfiniteFuture());
  EXPECT_TRUE(joined.ok()) << joined.status();
  shard::v1::StoreGetRequest get;
  get.mutable_scope()->set_job_id("job");
  get.mutable_scope()->set_generation(joined.ok() ? joined->generation() : 0);
  get.mutable_scope()->set_member_id("a");
  get.set_key("key");
  return get;
}

// Waits are bounded by the coordinator whatever the request asks for.
TEST(WaitLimitsTest, WaitsAreClampedToMaxWait) {
  CoordinatorOptions options;
  options.max_wait = absl::Milliseconds(100);
  options.expire_leases_in_background = false;
  testing::BlockingCoordinator service(options);
  shard::v1::StoreGetRequest get = StoreGetOfOneRankJob(service);
  get.set_wait_ms(UINT32_MAX);  // 49 days.
  absl::StatusOr<shard::v1::StoreGetResponse> waited =
      service.StoreGet(get, absl::InfiniteFuture());
  ASSERT_TRUE(waited.ok()) << waited.status();
  EXPECT_FALSE(waited->found());

  // A join asking for an hour returns after max_wait; the member stays.
  shard::v1::CreateJobRequest create = TwoRankJob();
  create.set_job_id("pair");
  ASSERT_TRUE(service.CreateJob(create).ok());
  shard::v1::JoinJobRequest join = JoinRequest("b", 3600000);
  join.set_job_id("pair");
  EXPECT_EQ(service.JoinJob(join, absl::InfiniteFuture()).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(service.Figures().waiting(WaitingCalls::Kind::kJoin), 0u);
  shard::v1::GetJobRequest get_job;
  get_job.set_job_id("pair");
  EXPECT_EQ(service.GetJob(get_job)->joined_members(), 1u);
}

// Past the limit (max_waiting_calls plus 2 per rank of the jobs held) a
// call that would wait is refused at once, naming the flag; one that does
// not wait is not limited.
TEST(WaitLimitsTest, WaitingCallsAreCountedAgainstTheLimit) {
  CoordinatorOptions options;
  options.max_waiting_calls = 1;
  options.expire_leases_in_background = false;
  testing::BlockingCoordinator service(options);
  shard::v1::StoreGetRequest get = StoreGetOfOneRankJob(service);
  EXPECT_EQ(service.Figures().waiting_limit, 1u + 2u);
  get.set_wait_ms(60000);
  std::vector<absl::StatusOr<shard::v1::StoreGetResponse>> waited(3);
  std::vector<std::thread> waiters;
  for (size_t i = 0; i < waited.size(); ++i) {
    waiters.emplace_back(
        [&, i] { waited[i] = service.StoreGet(get, absl::InfiniteFuture()); });
    while (service.Figures().waiting(WaitingCalls::Kind::kStoreGet) <= i) {
      absl::SleepFor(absl::Milliseconds(1));
    }
  }
  absl::StatusOr<shard::v1::StoreGetResponse> refused =
      service.StoreGet(get, absl::InfiniteFuture());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted)
      << refused.status();
  EXPECT_NE(refused.status().message().find("raise --max-waiting-calls"),
            absl::string_view::npos)
      << refused.status();
  get.set_wait_ms(0);
  EXPECT_TRUE(service.StoreGet(get, absl::InfiniteFuture()).ok());

  // The waiters are answered by the key arriving, and free their slots.
  shard::v1::StoreSetRequest set;
  *set.mutable_scope() = get.scope();
  set.set_key("key");
  set.set_value("v");
  ASSERT_TRUE(service.store().StoreSet(set).ok());
  for (std::thread& waiter : waiters) waiter.join();
  for (const auto& answer : waited) {
    ASSERT_TRUE(answer.ok()) << answer.status();
    EXPECT_EQ(answer->value(), "v");
  }
  EXPECT_EQ(service.Figures().waiting(WaitingCalls::Kind::kStoreGet), 0u);
  get.set_wait_ms(60000);
  EXPECT_TRUE(service.StoreGet(get, absl::InfiniteFuture()).ok());
}

// A disk whose fsync takes longer than the lease: heartbeats keep being
// answered while a commit waits for it, and nobody is evicted.
TEST(SlowDiskTest, FsyncLongerThanTheLeaseEvictsNobody) {
  char pattern[] = "/tmp/liveness-test-XXXXXX";
  const std::string dir = mkdtemp(pattern);
  testing::FaultInjectingFileSystem fs;
  absl::StatusOr<storage::OpenedLog> opened = storage::StateLog::Open(&fs, dir);
  ASSERT_TRUE(opened.ok()) << opened.status();
  CoordinatorOptions options;
  options.lease = absl::Seconds(1);
  {
    testing::BlockingCoordinator service(options, *std::move(opened));
    ASSERT_TRUE(service.CreateJob(TwoRankJob()).ok());
    std::thread other([&] {
      ASSERT_TRUE(
          service
              .JoinJob(JoinRequest("b", 10000), absl::Now() + absl::Seconds(10))
              .ok());
    });
    absl::StatusOr<shard::v1::JoinJobResponse> joined = service.JoinJob(
        JoinRequest("a", 10000), absl::Now() + absl::Seconds(10));
    other.join();
    ASSERT_TRUE(joined.ok()) << joined.status();
    const uint64_t generation = joined->generation();

    std::atomic<bool> committing{false}, done{false};
    std::atomic<int> answered_while_committing{0}, failed{0};
    std::thread heartbeats([&] {
      while (!done.load()) {
        for (const char* member : {"a", "b"}) {
          const bool during = committing.load();
          if (!service.Heartbeat(HeartbeatRequest(member, generation)).ok()) {
            ++failed;
          } else if (during && committing.load()) {
            ++answered_while_committing;
          }
        }
        absl::SleepFor(absl::Milliseconds(50));
      }
    });
    fs.DelaySyncs(absl::Seconds(3));  // Three leases.
    shard::v1::CommitProgressRequest commit;
    commit.set_job_id("job");
    commit.set_generation(generation);
    commit.set_epoch(0);
    commit.set_position(10);
    commit.set_member_id("a");
    committing.store(true);
    absl::StatusOr<shard::v1::CommitProgressResponse> committed =
        service.CommitProgress(commit);
    committing.store(false);
    fs.DelaySyncs(absl::ZeroDuration());
    absl::SleepFor(options.lease);  // One more lease on heartbeats alone.
    done.store(true);
    heartbeats.join();

    ASSERT_TRUE(committed.ok()) << committed.status();
    EXPECT_EQ(committed->generation(), generation);
    EXPECT_EQ(failed.load(), 0);
    EXPECT_GT(answered_while_committing.load(), 0)
        << "heartbeats waited for the disk";
    shard::v1::GetJobRequest get;
    get.set_job_id("job");
    absl::StatusOr<shard::v1::Job> job = service.GetJob(get);
    ASSERT_TRUE(job.ok());
    EXPECT_EQ(job->generation(), generation);
    EXPECT_EQ(job->current_world_size(), 2u);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shard::server
