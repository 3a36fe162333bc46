// CoordinatorReplicas' moves between replicas, through real gRPC calls: a
// standby (a fake one, in this process) refuses with the leader-hint
// trailers; a leader that does not answer is a closed port. And the
// keepalive that follows a replicated coordinator's leader lease.
#include "shard/client/coordinator_replicas.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/leader_hint.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "shard/v1/shard.grpc.pb.h"
#include "tests/support/test_cluster.h"

namespace shard::testing {
namespace {

using client::CoordinatorReplicas;

// "127.0.0.1:PORT" of a port nothing listens on (bound, then closed).
std::string ClosedPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return absl::StrCat("127.0.0.1:", ntohs(address.sin_port));
}

// Refuses GetJob as a standby replica does, naming `leader`.
class FakeStandby final : public shard::v1::Coordinator::CallbackService {
 public:
  explicit FakeStandby(std::string leader) : leader_(std::move(leader)) {}
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context,
                                   const shard::v1::GetJobRequest*,
                                   shard::v1::Job*) override {
    context->AddTrailingMetadata(kLeaderMetadataKey, leader_);
    context->AddTrailingMetadata(kStandbyMetadataKey, "1");
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "standby"));
    return reactor;
  }

 private:
  const std::string leader_;
};

class CoordinatorReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port);
    builder.RegisterService(&standby_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    standby_address_ = absl::StrCat("127.0.0.1:", port);
  }
  void TearDown() override { server_->Shutdown(); }

  // GetJob on the replica to call now, and what the replicas make of its
  // UNAVAILABLE: the index called.
  size_t CallAndFail(CoordinatorReplicas& replicas) {
    const CoordinatorReplicas::Pick pick = replicas.Current();
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    shard::v1::GetJobRequest request;
    shard::v1::Job job;
    const grpc::Status status = pick.stub->GetJob(&context, request, &job);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
    replicas.Failed(pick, context);
    return pick.index;
  }

  const std::string silent_leader_ = ClosedPort();
  FakeStandby standby_{silent_leader_};
  std::unique_ptr<grpc::Server> server_;
  std::string standby_address_;
};

TEST_F(CoordinatorReplicasTest, StaysWithStandbyWhileNamedLeaderIsSilent) {
  auto replicas = CoordinatorReplicas::Open(
      absl::StrCat(silent_leader_, ",", standby_address_), {}, 4 << 20);
  ASSERT_TRUE(replicas.ok()) << replicas.status();
  EXPECT_EQ(CallAndFail(**replicas), 0u);  // The leader: no answer.
  EXPECT_EQ(CallAndFail(**replicas), 1u);  // The standby names it.
  // The leader named did not answer: the retries stay with the standby,
  // which takes over once the leader's lease ends.
  EXPECT_EQ(CallAndFail(**replicas), 1u);
  EXPECT_EQ((*replicas)->Current().index, 1u);
}

TEST_F(CoordinatorReplicasTest, FollowsStandbyToLeaderNotKnownSilent) {
  auto replicas = CoordinatorReplicas::Open(
      absl::StrCat(standby_address_, ",", silent_leader_), {}, 4 << 20);
  ASSERT_TRUE(replicas.ok()) << replicas.status();
  // Nothing is known of the leader yet: the hint is followed.
  EXPECT_EQ(CallAndFail(**replicas), 0u);
  EXPECT_EQ((*replicas)->Current().index, 1u);
}

TEST(KeepaliveForLeaseTest, FollowsLeasesShorterThanTheDefault) {
  using client::Keepalive;
  using client::KeepaliveForLease;
  const Keepalive standard;
  EXPECT_EQ(standard.time, absl::Seconds(3));
  EXPECT_EQ(standard.timeout, absl::Seconds(2));
  EXPECT_EQ(KeepaliveForLease(absl::ZeroDuration()), standard);  // Unknown.
  EXPECT_EQ(KeepaliveForLease(absl::Seconds(5)), standard);
  EXPECT_EQ(KeepaliveForLease(absl::Seconds(30)), standard);
  EXPECT_EQ(KeepaliveForLease(absl::Seconds(4)),
            (Keepalive{absl::Seconds(1), absl::Seconds(2)}));
  EXPECT_EQ(KeepaliveForLease(absl::Seconds(2)),
            (Keepalive{absl::Milliseconds(500), absl::Seconds(1)}));
  // Pings no more often than every 500 ms, which shardd accepts.
  EXPECT_EQ(KeepaliveForLease(absl::Seconds(1)),
            (Keepalive{absl::Milliseconds(500), absl::Milliseconds(500)}));
}

// A replicated coordinator's answers carry its leader lease; the client's
// channels follow it once an answer (or a refusal) names it, and stay as
// they are for a coordinator that names none.
TEST(CoordinatorReplicasLeaseTest, ChannelsFollowTheLeaseAnAnswerNames) {
  server::CoordinatorServerOptions replicated;
  replicated.leader_lease = absl::Seconds(2);
  TestCluster leader({}, replicated);
  TestCluster single;
  for (const auto& [cluster, want] :
       {std::pair{&leader, client::KeepaliveForLease(absl::Seconds(2))},
        std::pair{&single, client::Keepalive{}}}) {
    auto replicas = CoordinatorReplicas::Open(cluster->address(), {}, 4 << 20);
    ASSERT_TRUE(replicas.ok()) << replicas.status();
    const CoordinatorReplicas::Pick pick = (*replicas)->Current();
    grpc::ClientContext context;
    shard::v1::GetJobRequest request;
    request.set_job_id("absent");
    shard::v1::Job job;
    const grpc::Status status = pick.stub->GetJob(&context, request, &job);
    ASSERT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
    (*replicas)->Answered(pick, context);
    EXPECT_EQ((*replicas)->keepalive(), want) << cluster->address();
    EXPECT_NE((*replicas)->Current().channel == pick.channel,
              cluster == &leader);
  }
}

}  // namespace
}  // namespace shard::testing
