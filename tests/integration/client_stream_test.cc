// The client library against an in-process coordinator: joins from several
// threads, streamed shards equal the preview, resume from a position, and
// the prefetch window bounds what is buffered, a coordinator that freezes.
#include <chrono>
#include <future>
#include <vector>

#include "gtest/gtest.h"
#include "shard/client/coordinator_channel.h"
#include "tests/support/tcp_proxy.h"
#include "tests/support/test_cluster.h"

namespace shard {
namespace {

shard::v1::JobSpec Spec(uint64_t n, uint32_t w) {
  shard::v1::JobSpec spec;
  spec.set_dataset_size(n);
  spec.set_world_size(w);
  spec.set_seed(17);
  return spec;
}

std::vector<uint64_t> Drain(client::ShardStream& stream, size_t batch) {
  std::vector<uint64_t> all, buffer(batch);
  while (true) {
    absl::StatusOr<size_t> got = stream.Next(absl::MakeSpan(buffer));
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok() || *got == 0) return all;
    all.insert(all.end(), buffer.begin(), buffer.begin() + *got);
  }
}

std::vector<uint64_t> Preview(client::CoordinatorClient& client,
                              const std::string& job, uint32_t rank,
                              uint64_t epoch) {
  auto page = client.Preview(job, rank, epoch, 0, 1000000);
  EXPECT_TRUE(page.ok()) << page.status();
  return {page->indices().begin(), page->indices().end()};
}

// Joins `world` members concurrently and returns their memberships by rank.
std::vector<client::Membership> JoinAll(testing::TestCluster& cluster,
                                        const std::string& job,
                                        const shard::v1::JobSpec& spec) {
  std::vector<std::future<absl::StatusOr<client::Membership>>> joins;
  for (uint32_t i = 0; i < spec.world_size(); ++i) {
    joins.push_back(std::async(std::launch::async, [&, i] {
      return cluster.NewClient()->Join(job, "member-" + std::to_string(i), spec,
                                       absl::Seconds(20));
    }));
  }
  std::vector<client::Membership> by_rank(spec.world_size());
  for (auto& join : joins) {
    absl::StatusOr<client::Membership> m = join.get();
    EXPECT_TRUE(m.ok()) << m.status();
    if (m.ok()) by_rank[m->rank] = *m;
  }
  return by_rank;
}

TEST(ClientStreamTest, StreamsEqualThePreviewForEveryRank) {
  testing::TestCluster cluster;
  auto client = cluster.NewClient();
  const auto spec = Spec(100003, 4);
  std::vector<client::Membership> members = JoinAll(cluster, "job", spec);
  client::StreamOptions options;
  options.chunk_indices = 1000;    // Many chunks per shard.
  options.prefetch_bytes = 12000;  // A window far below the shard size.
  for (uint64_t epoch : {0, 1}) {
    std::vector<uint64_t> all;
    for (const client::Membership& m : members) {
      auto stream = client->OpenStream(m, epoch, 0, options);
      const std::vector<uint64_t> got = Drain(*stream, 777);
      EXPECT_EQ(got, Preview(*client, "job", m.rank, epoch));
      EXPECT_EQ(stream->rank_shard_size(), got.size());
      EXPECT_EQ(stream->position(), got.size() * 4);
      all.insert(all.end(), got.begin(), got.end());
    }
    std::sort(all.begin(), all.end());
    EXPECT_EQ(std::unique(all.begin(), all.end()) - all.begin(), 100003);
  }
}

// Evaluation (tail uneven): ranks hold ceil or floor of N / W indices.
// Once its shard is exhausted every rank is at the epoch's length, so each
// one's commit completes the epoch; a mid-epoch position stays a round
// boundary to resume from.
TEST(ClientStreamTest, UnevenShardsEndAtTheEpochLength) {
  testing::TestCluster cluster;
  auto client = cluster.NewClient();
  constexpr uint32_t kWorld = 4;
  for (uint64_t n : {12, 13, 15, 10, 3}) {  // N % W: 0, 1, W-1, 2; N < W.
    SCOPED_TRACE(n);
    shard::v1::JobSpec spec = Spec(n, kWorld);
    spec.set_tail(shard::v1::TAIL_POLICY_UNEVEN);
    const std::string job = "eval-" + std::to_string(n);
    std::vector<client::Membership> members = JoinAll(cluster, job, spec);
    for (const client::Membership& m : members) {
      auto head = client->OpenStream(m, 0, 0);
      std::vector<uint64_t> one(1);
      ASSERT_TRUE(head->Next(absl::MakeSpan(one)).ok());
      if (n >= kWorld) {
        EXPECT_EQ(head->position(), kWorld);
      }

      auto stream = client->OpenStream(m, 0, 0);
      Drain(*stream, 5);
      EXPECT_EQ(stream->position(), n) << "rank " << m.rank;
      absl::StatusOr<shard::v1::CommitProgressResponse> committed =
          client->CommitProgress(m, 0, stream->position());
      ASSERT_TRUE(committed.ok())
          << "rank " << m.rank << ": " << committed.status();
      EXPECT_EQ(committed->committed_epoch(), 1u) << "rank " << m.rank;
      EXPECT_EQ(committed->committed_position(), 0u) << "rank " << m.rank;
    }
  }
}

// A join whose wait is spent before the world forms is DEADLINE_EXCEEDED,
// also when the last round asked the coordinator for no wait at all (it
// then answers at once, world_formed false): never a Membership without a
// world, whose stream would fail with "has no formed world".
TEST(ClientStreamTest, AJoinWhoseWaitRanOutHasNoMembership) {
  testing::TestCluster cluster;
  auto client = cluster.NewClient();
  ASSERT_TRUE(client->CreateJob("half", Spec(10, 2)).ok());
  for (absl::Duration wait : {absl::ZeroDuration(), absl::Milliseconds(300)}) {
    absl::StatusOr<client::Membership> joined =
        client->Join("half", "m0", std::nullopt, wait);
    EXPECT_TRUE(absl::IsDeadlineExceeded(joined.status())) << joined.status();
  }
  // The member stays joined: the second member forms the world.
  auto second =
      cluster.NewClient()->Join("half", "m1", std::nullopt, absl::Seconds(10));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->world_size, 2u);
}

TEST(ClientStreamTest, ResumesFromAGlobalPosition) {
  testing::TestCluster cluster;
  auto client = cluster.NewClient();
  const auto spec = Spec(1000, 2);
  std::vector<client::Membership> members = JoinAll(cluster, "job", spec);
  const std::vector<uint64_t> full = Preview(*client, "job", 1, 0);
  auto stream = client->OpenStream(members[1], 0, /*start_position=*/200);
  const std::vector<uint64_t> rest = Drain(*stream, 64);
  EXPECT_EQ(rest, std::vector<uint64_t>(full.begin() + 100, full.end()));
}

TEST(ClientStreamTest, ReportsAStaleGenerationWithoutRetrying) {
  testing::TestCluster cluster;
  auto client = cluster.NewClient();
  std::vector<client::Membership> members =
      JoinAll(cluster, "job", Spec(10, 1));
  client::Membership stale = members[0];
  stale.generation += 1;
  auto stream = client->OpenStream(stale, 0, 0);
  std::vector<uint64_t> buffer(4);
  absl::StatusOr<size_t> got = stream->Next(absl::MakeSpan(buffer));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kAborted);
}

TEST(ClientStreamTest, AnUnreachableCoordinatorIsUnavailableAfterRetries) {
  client::ClientOptions options;
  options.address = "127.0.0.1:1";  // Nothing listens on port 1.
  options.retry.initial_backoff = absl::Milliseconds(5);
  options.retry.deadline = absl::Milliseconds(200);
  auto client = *client::CoordinatorClient::Connect(options);
  absl::StatusOr<shard::v1::Job> job = client->GetJob("any");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().code(), absl::StatusCode::kUnavailable);
}

TEST(ClientStreamTest, ClosingAStreamEarlyDoesNotHang) {
  testing::TestCluster cluster;
  auto client = cluster.NewClient();
  std::vector<client::Membership> members =
      JoinAll(cluster, "job", Spec(1000000, 1));
  client::StreamOptions options;
  options.prefetch_bytes = 4000;
  auto stream = client->OpenStream(members[0], 0, 0, options);
  std::vector<uint64_t> buffer(10);
  ASSERT_TRUE(stream->Next(absl::MakeSpan(buffer)).ok());
  stream.reset();  // Reader thread is blocked on a full window; must exit.
  SUCCEED();
}

}  // namespace
}  // namespace shard

namespace shard {
namespace {

// A rank that stops reading its stream (the server blocks on flow control
// for that one call) does not hold up other ranks' streams or other calls.
TEST(ClientStreamTest, AStalledReaderDoesNotBlockOthers) {
  testing::TestCluster cluster;
  auto client = cluster.NewClient();
  std::vector<client::Membership> members =
      JoinAll(cluster, "job", Spec(4000000, 2));
  auto stub = cluster.NewStub();
  grpc::ClientContext stalled_context;
  shard::v1::StreamShardRequest request;
  request.set_job_id("job");
  request.set_generation(members[0].generation);
  request.set_rank(0);
  auto stalled = stub->StreamShard(&stalled_context, request);
  shard::v1::IndexChunk chunk;
  ASSERT_TRUE(stalled->Read(&chunk));  // Then it reads nothing more.

  auto stream = client->OpenStream(members[1], 0, 0);
  const std::vector<uint64_t> rest = Drain(*stream, 65536);
  EXPECT_EQ(rest.size(), 2000000u);
  EXPECT_TRUE(client->GetJob("job").ok());
  EXPECT_TRUE(client->CreateJob("other", Spec(10, 1)).ok());
  stalled_context.TryCancel();
}

// A coordinator that freezes (SIGSTOP, a frozen VM: its connection silent,
// not closed) while a stream is open: the clients' keepalive ends the call
// UNAVAILABLE (retried elsewhere), not as a code the clients do not retry.
TEST(ClientStreamTest, AStreamFromACoordinatorThatFreezesEndsUnavailable) {
  testing::TestCluster cluster;
  auto proxy = *testing::TcpProxy::Start(cluster.address());
  auto channel =
      *client::NewCoordinatorChannel(proxy->endpoint(), {}, 64 << 20);
  auto stub = shard::v1::Coordinator::NewStub(channel);
  shard::v1::JoinJobRequest join;
  join.set_job_id("frozen");
  join.set_member_id("reader");
  *join.mutable_spec() = Spec(10000000, 1);
  const shard::v1::JoinJobResponse joined =
      *cluster.service().JoinJob(join, absl::InfiniteFuture());
  grpc::ClientContext context;
  shard::v1::StreamShardRequest open;
  open.set_job_id("frozen");
  open.set_generation(joined.generation());
  open.set_max_chunk_indices(64);
  auto stream = stub->StreamShard(&context, open);
  shard::v1::IndexChunk chunk;
  ASSERT_TRUE(stream->Read(&chunk));
  proxy->Freeze();
  while (stream->Read(&chunk)) {
  }
  const grpc::Status ended = stream->Finish();
  EXPECT_EQ(ended.error_code(), grpc::UNAVAILABLE) << ended.error_message();
  proxy->Thaw();
}

// A join parked on a coordinator that freezes once the join has waited
// through more pings than gRPC sends without data by default (2): the
// keepalive still ends the call UNAVAILABLE (retried elsewhere). gRPC's
// default stopped pinging, and such a call waited out its deadline.
TEST(ClientStreamTest, AJoinParkedOnACoordinatorThatFreezesEndsUnavailable) {
  testing::TestCluster cluster;
  auto proxy = *testing::TcpProxy::Start(cluster.address());
  const client::Keepalive keepalive{absl::Milliseconds(500),
                                    absl::Milliseconds(500)};
  auto channel = *client::NewCoordinatorChannel(proxy->endpoint(), {}, 64 << 20,
                                                keepalive);
  auto stub = shard::v1::Coordinator::NewStub(channel);
  shard::v1::JoinJobRequest join;
  join.set_job_id("parked");
  join.set_member_id("alone");
  *join.mutable_spec() = Spec(100, 2);  // Its world never fills.
  join.set_wait_for_world_ms(60000);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  shard::v1::JoinJobResponse joined;
  std::future<grpc::Status> parked = std::async(std::launch::async, [&] {
    return stub->JoinJob(&context, join, &joined);
  });
  // Parked through 4 pings' time, all answered.
  absl::SleepFor(4 * keepalive.time);
  ASSERT_EQ(parked.wait_for(std::chrono::seconds(0)),
            std::future_status::timeout);
  proxy->Freeze();
  const grpc::Status ended = parked.get();
  EXPECT_EQ(ended.error_code(), grpc::UNAVAILABLE) << ended.error_message();
  proxy->Thaw();
}

}  // namespace
}  // namespace shard
