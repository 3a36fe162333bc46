// Balanced batches through the C++ client against an in-process
// coordinator: costs uploaded by digest, whole micro-batches from
// NextBatch() however the chunks cut them, the same step ends on every
// rank, every sample once, a resume at a step's end and across a cut
// connection, and the refusals of a job without its costs and of Next() on
// such a job; each window arranged once for the world's ranks, a new
// job's first one before any rank streams; a mixture with balanced
// batches.
#include <algorithm>
#include <future>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/plan/batches/cost_digest.h"
#include "common/plan/batches/cost_table.h"
#include "common/plan/mixtures/mixture.h"
#include "gtest/gtest.h"
#include "tests/support/spread_costs.h"
#include "tests/support/tcp_proxy.h"
#include "tests/support/test_cluster.h"

namespace shard {
namespace {

// Whole windows for 3 ranks (windows of 1,002: 1,000 rounded up to a
// multiple of W), so that no tail pads or drops a sample.
constexpr uint64_t kSamples = 5010;
constexpr uint32_t kWorld = 3;

std::string Costs() { return testing::SpreadCosts(kSamples); }

shard::v1::JobSpec Spec(const std::string& sha256) {
  shard::v1::JobSpec spec;
  spec.set_dataset_size(kSamples);
  spec.set_world_size(kWorld);
  spec.set_seed(5);
  spec.mutable_batches()->set_batch_tokens(4096);
  spec.mutable_batches()->set_window(1000);
  spec.mutable_batches()->set_costs_sha256(sha256);
  return spec;
}

// The spec of a job of `samples` samples with the default window, its
// costs uploaded.
shard::v1::JobSpec UploadedLargeJob(client::CoordinatorClient& client,
                                    uint64_t samples) {
  const std::string costs = testing::SpreadCosts(samples);
  const std::string sha256 = plan::Sha256Hex(costs);
  EXPECT_TRUE(client.PutCosts(sha256, costs).ok());
  shard::v1::JobSpec spec = Spec(sha256);
  spec.set_dataset_size(samples);
  spec.mutable_batches()->clear_window();  // The default window.
  return spec;
}

std::vector<client::Membership> JoinAll(testing::TestCluster& cluster,
                                        const shard::v1::JobSpec& spec) {
  std::vector<std::future<absl::StatusOr<client::Membership>>> joins;
  for (uint32_t i = 0; i < kWorld; ++i) {
    joins.push_back(std::async(std::launch::async, [&, i] {
      return cluster.NewClient()->Join("balanced", "m" + std::to_string(i),
                                       spec, absl::Seconds(20));
    }));
  }
  std::vector<client::Membership> by_rank(kWorld);
  for (auto& join : joins) {
    absl::StatusOr<client::Membership> m = join.get();
    EXPECT_TRUE(m.ok()) << m.status();
    if (m.ok()) by_rank[m->rank] = *m;
  }
  return by_rank;
}

// Members "m0", "m1", ... of `job` join at once, one through each of
// `clients` (a client is one incarnation of its members); their
// memberships in that order (fewer if a join failed, reported).
std::vector<client::Membership> JoinTogether(
    const std::vector<std::shared_ptr<client::CoordinatorClient>>& clients,
    const std::string& job, const shard::v1::JobSpec& spec) {
  std::vector<std::future<absl::StatusOr<client::Membership>>> joins;
  for (size_t i = 0; i < clients.size(); ++i) {
    joins.push_back(std::async(std::launch::async, [&, i] {
      return clients[i]->Join(job, absl::StrCat("m", i), spec,
                              absl::Seconds(20));
    }));
  }
  std::vector<client::Membership> joined;
  for (auto& join : joins) {
    absl::StatusOr<client::Membership> membership = join.get();
    EXPECT_TRUE(membership.ok()) << membership.status();
    if (membership.ok()) joined.push_back(*membership);
  }
  return joined;
}

std::vector<client::MicroBatch> Drain(client::CoordinatorClient& client,
                                      const client::Membership& member,
                                      uint64_t start, uint32_t chunk,
                                      uint64_t epoch_positions = kSamples) {
  client::StreamOptions options;
  options.chunk_indices = chunk;
  auto stream = client.OpenStream(member, 0, start, options);
  std::vector<client::MicroBatch> batches;
  while (true) {
    absl::StatusOr<std::optional<client::MicroBatch>> next =
        stream->NextBatch();
    EXPECT_TRUE(next.ok()) << next.status();
    if (!next.ok() || !next->has_value()) break;
    EXPECT_EQ(stream->position(), (*next)->step_end);
    batches.push_back(**std::move(next));
  }
  EXPECT_EQ(stream->position(), epoch_positions);  // the end of the epoch
  return batches;
}

bool SameBatches(const std::vector<client::MicroBatch>& a,
                 const std::vector<client::MicroBatch>& b) {
  return std::equal(
      a.begin(), a.end(), b.begin(), b.end(),
      [](const client::MicroBatch& x, const client::MicroBatch& y) {
        return x.indices == y.indices && x.step_end == y.step_end;
      });
}

TEST(BatchStreamTest, WholeMicroBatchesOncePerStepOnEveryRank) {
  testing::TestCluster cluster;
  auto client = cluster.NewClient();
  const std::string costs = Costs();
  const std::string sha256 = plan::Sha256Hex(costs);
  ASSERT_TRUE(client->PutCosts(sha256, costs).ok());
  ASSERT_TRUE(client->PutCosts(sha256, costs).ok());  // already complete
  const std::vector<client::Membership> members =
      JoinAll(cluster, Spec(sha256));
  std::vector<uint64_t> served;
  std::vector<uint64_t> rank0_step_ends;
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    const std::vector<client::MicroBatch> batches =
        Drain(*client, members[rank], 0, 0);
    // Chunks of 7 indices cut most micro-batches: they still arrive whole.
    EXPECT_TRUE(SameBatches(batches, Drain(*client, members[rank], 0, 7)));
    std::vector<uint64_t> step_ends;
    for (const client::MicroBatch& batch : batches) {
      EXPECT_FALSE(batch.indices.empty());
      step_ends.push_back(batch.step_end);
      served.insert(served.end(), batch.indices.begin(), batch.indices.end());
    }
    if (rank == 0) rank0_step_ends = step_ends;
    EXPECT_EQ(step_ends, rank0_step_ends) << "rank " << rank;
    // From the end of its 10th step, a rank gets the rest of its batches.
    ASSERT_GT(batches.size(), 10u);
    const std::vector<client::MicroBatch> rest =
        Drain(*client, members[rank], batches[9].step_end, 0);
    EXPECT_TRUE(SameBatches(rest, std::vector<client::MicroBatch>(
                                      batches.begin() + 10, batches.end())));
  }
  std::sort(served.begin(), served.end());
  ASSERT_EQ(served.size(), kSamples);
  for (uint64_t i = 0; i < kSamples; ++i) ASSERT_EQ(served[i], i);
}

// Every rank's epoch 0 read step by step, as DDP ranks train; returns the
// number of steps.
uint64_t DrainStepByStep(client::CoordinatorClient& client,
                         const std::vector<client::Membership>& members) {
  client::StreamOptions small;
  small.prefetch_bytes = 1024;  // the streams advance as they are read
  std::vector<std::unique_ptr<client::ShardStream>> streams;
  for (const client::Membership& member : members) {
    streams.push_back(client.OpenStream(member, 0, 0, small));
  }
  uint64_t steps = 0;
  for (bool more = true; more;) {
    more = false;
    for (auto& stream : streams) {
      absl::StatusOr<std::optional<client::MicroBatch>> next =
          stream->NextBatch();
      EXPECT_TRUE(next.ok()) << next.status();
      more = more || (next.ok() && next->has_value());
    }
    steps += more;
  }
  return steps;
}

// The coordinator arranges each window once for the ranks of a world that
// stream together, not once per rank (a rank asking while another
// arranges it waits); a rank that re-reads windows every rank took
// arranges them again. The job's balance figures count the epoch's steps.
TEST(BatchStreamTest, TheRanksOfAWorldShareEachWindowsArrangement) {
  // Windows of 65,538 (the default rounded up to a multiple of W); the
  // last one of 16,929 samples, a multiple of W too.
  constexpr uint64_t kLarge = 999999;
  constexpr uint64_t kWindows = (kLarge + 65537) / 65538;
  testing::TestCluster cluster;
  auto client = cluster.NewClient();
  const std::vector<client::Membership> members =
      JoinAll(cluster, UploadedLargeJob(*client, kLarge));
  const uint64_t steps = DrainStepByStep(*client, members);
  const uint64_t together = cluster.service().Figures().batch_windows_arranged;
  EXPECT_EQ(together, kWindows);
  // GetJob tells how balanced the epoch's steps were.
  absl::StatusOr<shard::v1::Job> job = client->GetJob("balanced");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->batch_balance().steps(), steps);
  EXPECT_EQ(job->batch_balance().samples(), kLarge);
  EXPECT_GE(job->batch_balance().imbalance_p99(), 1.0);
  EXPECT_LE(job->batch_balance().imbalance_p50(),
            job->batch_balance().imbalance_p99());
  Drain(*client, members[1], 0, 0, kLarge);
  EXPECT_EQ(cluster.service().Figures().batch_windows_arranged,
            together + kWindows);
}

// A new job's first window is arranged as the job is created, before any
// rank streams, and the first world's streams take that arrangement
// instead of making their own.
TEST(BatchStreamTest, ANewJobsFirstWindowIsArrangedBeforeAnyStream) {
  // Windows of 65,538 (the default rounded up to a multiple of W); the
  // last one of 16,929 samples, a multiple of W too.
  constexpr uint64_t kLarge = 999999;
  constexpr uint64_t kWindows = (kLarge + 65537) / 65538;
  testing::TestCluster cluster;
  auto client = cluster.NewClient();
  const shard::v1::JobSpec spec = UploadedLargeJob(*client, kLarge);
  ASSERT_TRUE(client->CreateJob("balanced", spec).ok());
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (cluster.service().Figures().batch_windows_arranged == 0 &&
         absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(cluster.service().Figures().batch_windows_arranged, 1u);
  // Arranged is not streamed: no balance before a rank took a window.
  EXPECT_FALSE(client->GetJob("balanced")->has_batch_balance());
  DrainStepByStep(*client, JoinAll(cluster, spec));
  EXPECT_EQ(cluster.service().Figures().batch_windows_arranged, kWindows);
}

// After a mid-epoch resize the job's balance figures are those of the
// world that serves the rest, from where it began: no step twice, the
// samples of the rest once.
TEST(BatchStreamTest, AResizedEpochsFiguresCountEveryStepOnce) {
  testing::TestCluster cluster;
  auto client = cluster.NewClient();
  const std::string costs = Costs();
  ASSERT_TRUE(client->PutCosts(plan::Sha256Hex(costs), costs).ok());
  shard::v1::JobSpec spec = Spec(plan::Sha256Hex(costs));
  spec.set_world_size(2);
  spec.set_min_world_size(1);
  spec.set_max_world_size(2);
  // Each member's calls go through the client that joined it (a client is
  // one incarnation of its members).
  const std::vector<std::shared_ptr<client::CoordinatorClient>> clients = {
      cluster.NewClient(), cluster.NewClient()};
  const std::vector<client::Membership> two =
      JoinTogether(clients, "elastic", spec);
  ASSERT_EQ(two.size(), 2u);
  uint64_t base = 0;
  for (int i = 0; i < 2; ++i) {
    auto stream = clients[i]->OpenStream(two[i], 0, 0);
    for (int step = 0; step < 10; ++step) {
      absl::StatusOr<std::optional<client::MicroBatch>> next =
          stream->NextBatch();
      ASSERT_TRUE(next.ok() && next->has_value()) << next.status();
      base = (*next)->step_end;
    }
  }
  ASSERT_TRUE(clients[0]->CommitProgress(two[0], 0, base).ok());
  absl::Status left = clients[1]->Leave(two[1]);
  ASSERT_TRUE(left.ok()) << left;
  absl::StatusOr<client::Membership> one =
      clients[0]->Join("elastic", two[0].member_id, spec, absl::Seconds(20));
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_EQ(one->world_size, 1u);
  Drain(*clients[0], *one, base, 1000);
  absl::StatusOr<shard::v1::Job> job = client->GetJob("elastic");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->batch_balance().from_position(), base);
  EXPECT_EQ(job->batch_balance().samples(), kSamples - base);
}

// A world of 2 commits 2 samples before the end (steps of one sample per
// rank) and grows to 3 with the drop tail: the 2 left are dropped, the new
// world serves nothing of the epoch, and the job shows no balance of it
// (not the earlier world's figures).
TEST(BatchStreamTest, AResizeThatLeavesNothingLeavesNoFigures) {
  constexpr uint64_t kSmall = 200;
  testing::TestCluster cluster;
  std::string costs;
  for (uint64_t i = 0; i < kSmall; ++i) costs += std::string("\x0a\0\0\0", 4);
  const std::string sha256 = plan::Sha256Hex(costs);
  ASSERT_TRUE(cluster.NewClient()->PutCosts(sha256, costs).ok());
  shard::v1::JobSpec spec;
  spec.set_dataset_size(kSmall);
  spec.set_world_size(2);
  spec.set_min_world_size(1);
  spec.set_max_world_size(3);
  spec.set_tail(shard::v1::TAIL_POLICY_DROP);
  spec.mutable_batches()->set_batch_tokens(10);  // one sample a micro-batch
  spec.mutable_batches()->set_costs_sha256(sha256);
  const std::vector<std::shared_ptr<client::CoordinatorClient>> clients = {
      cluster.NewClient(), cluster.NewClient(), cluster.NewClient()};
  const std::vector<client::Membership> two =
      JoinTogether({clients[0], clients[1]}, "grows", spec);
  ASSERT_EQ(two.size(), 2u);
  for (int i = 0; i < 2; ++i) Drain(*clients[i], two[i], 0, 0, kSmall);
  ASSERT_TRUE(clients[0]->GetJob("grows")->has_batch_balance());
  // The third member waits for the next commit, which admits it.
  auto third = std::async(std::launch::async, [&] {
    return clients[2]->Join("grows", "m2", spec, absl::Seconds(20));
  });
  while (clients[0]->GetJob("grows")->joined_members() < 3) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ASSERT_TRUE(clients[0]->CommitProgress(two[0], 0, kSmall - 2).ok());
  absl::StatusOr<client::Membership> grown = third.get();
  ASSERT_TRUE(grown.ok()) << grown.status();
  ASSERT_EQ(grown->world_size, 3u);
  std::vector<client::MicroBatch> served =
      Drain(*clients[2], *grown, kSmall - 2, 0, kSmall - 2);
  EXPECT_TRUE(served.empty());
  absl::StatusOr<shard::v1::Job> job = clients[0]->GetJob("grows");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_FALSE(job->has_batch_balance()) << job->batch_balance().DebugString();
}

TEST(BatchStreamTest, RefusesAJobWithoutItsCostsAndNextOnBatches) {
  testing::TestCluster cluster;
  auto client = cluster.NewClient();
  const std::string costs = Costs();
  const std::string sha256 = plan::Sha256Hex(costs);
  absl::StatusOr<shard::v1::Job> created =
      client->CreateJob("balanced", Spec(sha256));
  EXPECT_EQ(created.status().code(), absl::StatusCode::kFailedPrecondition)
      << created.status();
  ASSERT_TRUE(client->PutCosts(sha256, costs).ok());
  const std::vector<client::Membership> members =
      JoinAll(cluster, Spec(sha256));
  auto stream = client->OpenStream(members[0], 0, 0);
  std::vector<uint64_t> out(10);
  EXPECT_EQ(stream->Next(absl::MakeSpan(out)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// JobSpec.batches.costs_total: CreateJob refuses a sum other than the
// costs'; a job created with the sum and one created without it each
// match a join that gives it or not (the job keeps its own).
TEST(BatchStreamTest, TheCostsSumIsCheckedAtCreateAndKeptByTheJob) {
  testing::TestCluster cluster;
  auto client = cluster.NewClient();
  const std::string costs = Costs();
  const std::string sha256 = plan::Sha256Hex(costs);
  ASSERT_TRUE(client->PutCosts(sha256, costs).ok());
  shard::v1::JobSpec spec = Spec(sha256);
  spec.mutable_batches()->set_costs_total(plan::CostsTotal(costs) + 1);
  const absl::StatusOr<shard::v1::Job> wrong =
      client->CreateJob("balanced", spec);
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(wrong.status().message().find("costs_total"), std::string::npos)
      << wrong.status();
  spec.mutable_batches()->set_costs_total(plan::CostsTotal(costs));
  ASSERT_TRUE(client->CreateJob("balanced", spec).ok());
  shard::v1::JobSpec without = spec;
  without.mutable_batches()->clear_costs_total();
  const absl::StatusOr<shard::v1::Job> again =
      client->CreateJob("balanced", without);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->spec().batches().costs_total(), plan::CostsTotal(costs));
  ASSERT_TRUE(client->CreateJob("plain-sum", without).ok());
  EXPECT_TRUE(client->CreateJob("plain-sum", spec).ok());
}

// A mixture with balanced batches: its costs are its sources' one after
// another (one per sample of the dataset, by global index), and its epoch
// (here longer than the dataset: source "a" twice) is served in whole,
// balanced steps, every chosen sample as often as the epoch chose it, and
// resumed at a step's end.
TEST(BatchStreamTest, AMixtureServesItsEpochInSteps) {
  constexpr uint64_t kA = 1200;
  constexpr uint64_t kB = 3000;
  constexpr uint64_t kEpoch = 2 * kA + 1002;  // whole windows of 1,002
  testing::TestCluster cluster;
  auto client = cluster.NewClient();
  shard::v1::JobSpec spec = Spec("");
  spec.set_dataset_size(0);
  shard::v1::Source* a = spec.add_sources();
  a->set_name("a");
  a->set_size(kA);
  a->set_repeat(2);
  shard::v1::Source* b = spec.add_sources();
  b->set_name("b");
  b->set_size(kB);
  b->set_choose(1002);
  // One cost per position of the epoch is not one per sample: refused.
  const std::string per_position = testing::SpreadCosts(kEpoch);
  spec.mutable_batches()->set_costs_sha256(plan::Sha256Hex(per_position));
  ASSERT_TRUE(
      client->PutCosts(plan::Sha256Hex(per_position), per_position).ok());
  EXPECT_EQ(client->CreateJob("mixture", spec).status().code(),
            absl::StatusCode::kInvalidArgument);
  const std::string costs = testing::SpreadCosts(kA + kB);
  spec.mutable_batches()->set_costs_sha256(plan::Sha256Hex(costs));
  ASSERT_TRUE(client->PutCosts(plan::Sha256Hex(costs), costs).ok());
  const std::vector<client::Membership> members = JoinAll(cluster, spec);
  std::vector<uint64_t> served;
  size_t steps = 0;
  for (uint32_t rank = 0; rank < kWorld; ++rank) {
    const std::vector<client::MicroBatch> batches =
        Drain(*client, members[rank], 0, 0, kEpoch);
    if (rank == 0) steps = batches.size();
    EXPECT_EQ(batches.size(), steps) << "rank " << rank;
    // Resumed from the end of its 10th step: the rest of its batches.
    ASSERT_GT(batches.size(), 10u);
    EXPECT_TRUE(SameBatches(
        Drain(*client, members[rank], batches[9].step_end, 0, kEpoch),
        std::vector<client::MicroBatch>(batches.begin() + 10, batches.end())));
    for (const client::MicroBatch& batch : batches) {
      served.insert(served.end(), batch.indices.begin(), batch.indices.end());
    }
  }
  const plan::MixtureEpoch chosen(members[0].spec, 0);
  std::vector<uint64_t> expected;
  for (uint64_t j = 0; j < chosen.size(); ++j) {
    expected.push_back(chosen.Chosen(j));
  }
  std::sort(served.begin(), served.end());
  std::sort(expected.begin(), expected.end());
  ASSERT_EQ(expected.size(), kEpoch);
  EXPECT_EQ(served, expected);
}

// A stream whose connection is cut mid-epoch reconnects at the end of the
// last step it received whole: its micro-batches are an uninterrupted
// stream's, none twice, none missing (a micro-batch received in part is
// received again from its step).
TEST(BatchStreamTest, AReconnectResumesAtTheLastWholeStep) {
  constexpr uint64_t kLarge = 1000000;  // Far more than gRPC buffers.
  testing::TestCluster cluster;
  auto client = cluster.NewClient();
  shard::v1::JobSpec spec = UploadedLargeJob(*client, kLarge);
  spec.set_world_size(1);
  const absl::StatusOr<client::Membership> member =
      client->Join("large", "only", spec, absl::Seconds(20));
  ASSERT_TRUE(member.ok()) << member.status();
  client::StreamOptions small;
  small.chunk_indices = 7;  // Most micro-batches span chunks.
  small.prefetch_bytes = 1024;
  std::vector<client::MicroBatch> whole;
  {
    auto stream = client->OpenStream(*member, 0, 0, small);
    while (true) {
      auto next = stream->NextBatch();
      ASSERT_TRUE(next.ok()) << next.status();
      if (!next->has_value()) break;
      whole.push_back(**std::move(next));
    }
  }
  auto proxy = *testing::TcpProxy::Start(cluster.address());
  client::ClientOptions options;
  options.address = proxy->endpoint();
  auto proxied = *client::CoordinatorClient::Connect(options);
  auto stream = proxied->OpenStream(*member, 0, 0, small);
  std::vector<client::MicroBatch> cut;
  while (true) {
    if (cut.size() == 100) proxy->CutAll();
    auto next = stream->NextBatch();
    ASSERT_TRUE(next.ok()) << next.status();
    if (!next->has_value()) break;
    cut.push_back(**std::move(next));
  }
  EXPECT_GE(proxy->accepted(), 2);  // It did reconnect.
  EXPECT_EQ(cut.size(), whole.size());
  EXPECT_TRUE(SameBatches(cut, whole));
  EXPECT_EQ(stream->position(), kLarge);
}

}  // namespace
}  // namespace shard
