// Waiting joins over real gRPC (served on their own completion queues): they
// hold no server thread, a cancelled one ends at once, they are answered
// when the world forms, and a server that stops ends them.
#include <algorithm>
#include <atomic>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/support/async_joins.h"
#include "tests/support/test_cluster.h"

namespace shard::testing {
namespace {

using Kind = server::WaitingCalls::Kind;

int ProcessThreads() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

// Polls `done` for up to a minute (a liveness bound, not a timing check).
template <typename Predicate>
bool Eventually(Predicate done) {
  const absl::Time give_up = absl::Now() + absl::Minutes(1);
  while (!done()) {
    if (absl::Now() > give_up) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

void CreateJob(TestCluster& cluster, const std::string& id, uint32_t world) {
  shard::v1::CreateJobRequest create;
  create.set_job_id(id);
  create.mutable_spec()->set_dataset_size(1000);
  create.mutable_spec()->set_world_size(world);
  ASSERT_TRUE(cluster.service().CreateJob(create).ok());
}

TEST(WaitingCallsTest, WaitingJoinsHoldNoThreadAndCancellingEndsThem) {
  TestCluster cluster;
  CreateJob(cluster, "big", 1000);
  auto stub = cluster.NewStub();
  const int threads_before = ProcessThreads();
  constexpr int kJoins = 200;
  AsyncJoins joins({stub.get()}, "big", "m", kJoins, /*wait_ms=*/600000);
  ASSERT_TRUE(Eventually([&] {
    return cluster.service().Figures().waiting(Kind::kJoin) == kJoins;
  }));
  // A thread per waiting call would add 200.
  EXPECT_LT(ProcessThreads() - threads_before, kJoins / 4);

  joins.CancelAll();
  ASSERT_TRUE(Eventually([&] {
    return cluster.service().Figures().waiting(Kind::kJoin) == 0 &&
           joins.finished() == kJoins;
  })) << "cancelled joins kept waiting";
  EXPECT_EQ(joins.status(0).error_code(), grpc::StatusCode::CANCELLED);
  // The members stay joined (a cancelled wait is not a leave).
  shard::v1::GetJobRequest get;
  get.set_job_id("big");
  EXPECT_EQ(cluster.service().GetJob(get)->joined_members(),
            static_cast<uint32_t>(kJoins));
}

TEST(WaitingCallsTest, WaitingJoinsAreAnsweredWhenTheWorldForms) {
  TestCluster cluster;
  constexpr int kWorld = 64;
  CreateJob(cluster, "job", kWorld);
  auto stub = cluster.NewStub();
  AsyncJoins joins({stub.get()}, "job", "m", kWorld, /*wait_ms=*/600000);
  ASSERT_TRUE(Eventually([&] { return joins.finished() == kWorld; }));
  std::vector<bool> ranks(kWorld, false);
  for (int i = 0; i < kWorld; ++i) {
    ASSERT_TRUE(joins.status(i).ok()) << joins.status(i).error_message();
    ASSERT_TRUE(joins.response(i).world_formed());
    EXPECT_EQ(joins.response(i).world_size(), static_cast<uint32_t>(kWorld));
    ranks.at(joins.response(i).rank()) = true;
  }
  EXPECT_EQ(std::count(ranks.begin(), ranks.end(), true), kWorld);
  EXPECT_EQ(cluster.service().Figures().waiting(Kind::kJoin), 0u);
}

TEST(WaitingCallsTest, StoppingTheServerEndsEveryWaitingCall) {
  TestCluster cluster;
  CreateJob(cluster, "big", 1000);
  auto stub = cluster.NewStub();
  constexpr int kJoins = 100;
  AsyncJoins joins({stub.get()}, "big", "m", kJoins, /*wait_ms=*/600000);
  ASSERT_TRUE(Eventually([&] {
    return cluster.service().Figures().waiting(Kind::kJoin) == kJoins;
  }));
  // Returns once every call ended (the waiting calls' queues drained).
  cluster.server().Stop(absl::Seconds(5));
  ASSERT_TRUE(Eventually([&] { return joins.finished() == kJoins; }));
  for (int i = 0; i < kJoins; ++i) {
    EXPECT_EQ(joins.status(i).error_code(), grpc::StatusCode::UNAVAILABLE)
        << joins.status(i).error_message();
  }
}

}  // namespace
}  // namespace shard::testing
