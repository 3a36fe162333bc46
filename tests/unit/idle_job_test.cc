// --idle-job-ttl: a job with no member and no call for the TTL is deleted
// (journaled, so a restart does not bring it back) and counted; a job with
// a live member never expires; any call naming the job restarts its idle
// time; a TTL of zero keeps jobs forever.
#include <unistd.h>

#include <filesystem>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/storage/file_system.h"
#include "gtest/gtest.h"
#include "server/storage/state_log.h"
#include "tests/support/blocking_coordinator.h"

namespace shard::server {
namespace {

constexpr absl::Duration kTtl = absl::Hours(24);

shard::v1::CreateJobRequest OneRankJob(const std::string& id) {
  shard::v1::CreateJobRequest request;
  request.set_job_id(id);
  request.mutable_spec()->set_dataset_size(100);
  request.mutable_spec()->set_world_size(1);
  return request;
}

class IdleJobTest : public ::testing::Test {
 protected:
  CoordinatorOptions Options(absl::Duration ttl = kTtl) {
    CoordinatorOptions options;
    options.lease = absl::Seconds(10);
    options.idle_job_ttl = ttl;
    options.expire_leases_in_background = false;
    options.now = [this] {
      absl::MutexLock lock(&clock_mu_);
      return now_;
    };
    return options;
  }

  // Advances the clock in lease-sized steps, sweeping like the lease
  // thread does, heartbeating `member` of `job` (if given) at each step.
  void Pass(testing::BlockingCoordinator& service, absl::Duration total,
            const std::string& job = "", uint64_t generation = 0) {
    for (absl::Duration passed; passed < total; passed += absl::Seconds(5)) {
      {
        absl::MutexLock lock(&clock_mu_);
        now_ += absl::Seconds(5);
      }
      if (!job.empty()) {
        shard::v1::HeartbeatRequest beat;
        beat.set_job_id(job);
        beat.set_member_id("m");
        beat.set_generation(generation);
        ASSERT_TRUE(service.Heartbeat(beat).ok());
      }
      service.ExpireLeases();
    }
  }

  static bool Exists(testing::BlockingCoordinator& service,
                     const std::string& id) {
    shard::v1::ListJobsResponse jobs = *service.ListJobs({});
    for (const shard::v1::Job& job : jobs.jobs()) {
      if (job.job_id() == id) return true;
    }
    return false;
  }

  absl::Mutex clock_mu_;
  absl::Time now_ ABSL_GUARDED_BY(clock_mu_) = absl::UnixEpoch();
};

TEST_F(IdleJobTest, AJobWithoutMembersExpiresAfterTheTtl) {
  testing::BlockingCoordinator service(Options());
  ASSERT_TRUE(service.CreateJob(OneRankJob("idle")).ok());
  service.ExpireLeases();
  Pass(service, kTtl - absl::Minutes(1));
  EXPECT_TRUE(Exists(service, "idle"));
  EXPECT_EQ(service.Figures().idle_jobs_expired, 0);
  Pass(service, absl::Minutes(2));
  EXPECT_FALSE(Exists(service, "idle"));
  EXPECT_EQ(service.Figures().idle_jobs_expired, 1);
}

TEST_F(IdleJobTest, AJobWithALiveMemberNeverExpires) {
  testing::BlockingCoordinator service(Options());
  shard::v1::JoinJobRequest join;
  join.set_job_id("busy");
  join.set_member_id("m");
  *join.mutable_spec() = OneRankJob("busy").spec();
  absl::StatusOr<shard::v1::JoinJobResponse> joined =
      service.JoinJob(join, absl::InfiniteFuture());
  ASSERT_TRUE(joined.ok()) << joined.status();
  // A long epoch: three TTLs of heartbeats only.
  Pass(service, 3 * kTtl, "busy", joined->generation());
  EXPECT_TRUE(Exists(service, "busy"));
  // Once it leaves, the idle time counts from then.
  shard::v1::LeaveRequest leave;
  leave.set_job_id("busy");
  leave.set_member_id("m");
  ASSERT_TRUE(service.Leave(leave).ok());
  Pass(service, kTtl - absl::Minutes(1));
  EXPECT_TRUE(Exists(service, "busy"));
  Pass(service, absl::Minutes(2));
  EXPECT_FALSE(Exists(service, "busy"));
}

TEST_F(IdleJobTest, ACallNamingTheJobRestartsItsIdleTime) {
  testing::BlockingCoordinator service(Options());
  ASSERT_TRUE(service.CreateJob(OneRankJob("watched")).ok());
  service.ExpireLeases();
  Pass(service, kTtl - absl::Hours(1));
  shard::v1::GetJobRequest get;
  get.set_job_id("watched");
  ASSERT_TRUE(service.GetJob(get).ok());
  Pass(service, kTtl - absl::Hours(1));
  EXPECT_TRUE(Exists(service, "watched"));
  Pass(service, absl::Hours(2));
  EXPECT_FALSE(Exists(service, "watched"));
}

TEST_F(IdleJobTest, ZeroKeepsJobsForever) {
  testing::BlockingCoordinator service(Options(absl::ZeroDuration()));
  ASSERT_TRUE(service.CreateJob(OneRankJob("kept")).ok());
  Pass(service, 10 * kTtl);
  EXPECT_TRUE(Exists(service, "kept"));
}

TEST_F(IdleJobTest, TheExpiryIsJournaled) {
  const std::string dir = (std::filesystem::path(::testing::TempDir()) /
                           ("idle-job-journal-" + std::to_string(getpid())))
                              .string();
  std::filesystem::remove_all(dir);
  {
    absl::StatusOr<storage::OpenedLog> opened =
        storage::StateLog::Open(storage::PosixFileSystem(), dir, {});
    ASSERT_TRUE(opened.ok()) << opened.status();
    testing::BlockingCoordinator service(Options(), *std::move(opened));
    ASSERT_TRUE(service.CreateJob(OneRankJob("gone")).ok());
    ASSERT_TRUE(service.CreateJob(OneRankJob("stays")).ok());
    service.ExpireLeases();
    Pass(service, kTtl / 2);
    shard::v1::GetJobRequest get;
    get.set_job_id("stays");
    ASSERT_TRUE(service.GetJob(get).ok());
    Pass(service, kTtl / 2 + absl::Minutes(1));
    EXPECT_FALSE(Exists(service, "gone"));
  }
  absl::StatusOr<storage::OpenedLog> reopened =
      storage::StateLog::Open(storage::PosixFileSystem(), dir, {});
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  testing::BlockingCoordinator restarted(Options(), *std::move(reopened));
  EXPECT_FALSE(Exists(restarted, "gone"));
  EXPECT_TRUE(Exists(restarted, "stays"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shard::server
