// Every kind of bad request gets the documented status code and a message
// that says what was expected, through the real gRPC server.
#include <atomic>
#include <thread>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/support/test_cluster.h"

namespace shard {
namespace {

using grpc::StatusCode;

class StatusCodesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stub_ = cluster_.NewStub();
    ASSERT_EQ(CreateJob("job", 10, 2).error_code(), StatusCode::OK);
  }

  grpc::Status CreateJob(const std::string& id, uint64_t n, uint32_t w) {
    shard::v1::CreateJobRequest request;
    request.set_job_id(id);
    request.mutable_spec()->set_dataset_size(n);
    request.mutable_spec()->set_world_size(w);
    shard::v1::Job job;
    grpc::ClientContext context;
    return stub_->CreateJob(&context, request, &job);
  }

  grpc::Status Join(const std::string& job, const std::string& member,
                    uint32_t wait_ms, shard::v1::JoinJobResponse* out,
                    const shard::v1::JobSpec* spec = nullptr) {
    shard::v1::JoinJobRequest request;
    request.set_job_id(job);
    request.set_member_id(member);
    request.set_wait_for_world_ms(wait_ms);
    if (spec != nullptr) *request.mutable_spec() = *spec;
    grpc::ClientContext context;
    return stub_->JoinJob(&context, request, out);
  }

  // Forms the world of "job" and returns its generation.
  uint64_t FormWorld() {
    shard::v1::JoinJobResponse a, b;
    EXPECT_TRUE(Join("job", "a", 0, &a).ok());
    EXPECT_TRUE(Join("job", "b", 1000, &b).ok());
    EXPECT_TRUE(b.world_formed());
    return b.generation();
  }

  grpc::Status Stream(shard::v1::StreamShardRequest request) {
    grpc::ClientContext context;
    auto reader = stub_->StreamShard(&context, request);
    shard::v1::IndexChunk chunk;
    while (reader->Read(&chunk)) {
    }
    return reader->Finish();
  }

  shard::v1::StreamShardRequest StreamRequest(uint64_t generation) {
    shard::v1::StreamShardRequest request;
    request.set_job_id("job");
    request.set_generation(generation);
    return request;
  }

  void ExpectCode(const grpc::Status& status, StatusCode code,
                  const std::string& needle) {
    EXPECT_EQ(status.error_code(), code) << status.error_message();
    EXPECT_NE(status.error_message().find(needle), std::string::npos)
        << status.error_message();
  }

  testing::TestCluster cluster_;
  std::unique_ptr<shard::v1::Coordinator::Stub> stub_;
};

TEST_F(StatusCodesTest, CreateJobValidatesItsInput) {
  ExpectCode(CreateJob("bad id!", 10, 2), StatusCode::INVALID_ARGUMENT,
             "job_id");
  ExpectCode(CreateJob("j2", 0, 2), StatusCode::INVALID_ARGUMENT,
             "dataset_size");
  ExpectCode(CreateJob("j2", 10, 0), StatusCode::INVALID_ARGUMENT,
             "world_size");
}

TEST_F(StatusCodesTest, CreateJobIsIdempotentButRefusesAConflict) {
  EXPECT_EQ(CreateJob("job", 10, 2).error_code(), StatusCode::OK);
  ExpectCode(CreateJob("job", 11, 2), StatusCode::ALREADY_EXISTS, "N=10 W=2");
}

// A join may name a launch's size within an elastic job's bounds; a
// CreateJob names the job itself, so another world size is a conflict.
TEST_F(StatusCodesTest, CreateJobOfAnElasticJobRefusesAnotherWorldSize) {
  shard::v1::CreateJobRequest request;
  request.set_job_id("elastic");
  request.mutable_spec()->set_dataset_size(10);
  request.mutable_spec()->set_world_size(3);
  request.mutable_spec()->set_min_world_size(2);
  request.mutable_spec()->set_max_world_size(4);
  shard::v1::Job job;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->CreateJob(&context, request, &job).ok());
  }
  request.mutable_spec()->set_world_size(4);
  grpc::ClientContext context;
  ExpectCode(stub_->CreateJob(&context, request, &job),
             StatusCode::ALREADY_EXISTS, "world_size: 3 -> 4");
  shard::v1::JoinJobResponse joined;
  EXPECT_TRUE(Join("elastic", "a", 0, &joined, &request.spec()).ok());
}

TEST_F(StatusCodesTest, UnknownJobIsNotFound) {
  shard::v1::GetJobRequest request;
  request.set_job_id("missing");
  shard::v1::Job job;
  grpc::ClientContext context;
  ExpectCode(stub_->GetJob(&context, request, &job), StatusCode::NOT_FOUND,
             "missing");
  shard::v1::JoinJobResponse joined;
  ExpectCode(Join("missing", "a", 0, &joined), StatusCode::NOT_FOUND,
             "join with a spec");
}

TEST_F(StatusCodesTest, JoinRefusesBadIdsAConflictingSpecAndAFullWorld) {
  shard::v1::JoinJobResponse joined;
  ExpectCode(Join("job", "", 0, &joined), StatusCode::INVALID_ARGUMENT,
             "member_id");
  shard::v1::JobSpec other;
  other.set_dataset_size(99);
  other.set_world_size(2);
  ExpectCode(Join("job", "a", 0, &joined, &other),
             StatusCode::FAILED_PRECONDITION, "N=99");
  // A difference the one-line form does not show is named.
  other.set_dataset_size(10);
  other.set_shuffle_algorithm(shard::v1::SHUFFLE_ALGORITHM_FEISTEL);
  ExpectCode(Join("job", "a", 0, &joined, &other),
             StatusCode::FAILED_PRECONDITION,
             "asks for another (the job's -> the request's: modified: "
             "shuffle_algorithm: SHUFFLE_ALGORITHM_TORCH -> "
             "SHUFFLE_ALGORITHM_FEISTEL)");
  FormWorld();
  ExpectCode(Join("job", "c", 0, &joined), StatusCode::FAILED_PRECONDITION,
             "already has its 2 members");
}

TEST_F(StatusCodesTest, JoinTimesOutWhileTheWorldIsIncomplete) {
  shard::v1::JoinJobResponse joined;
  ExpectCode(Join("job", "a", 50, &joined), StatusCode::DEADLINE_EXCEEDED,
             "1 members joined");
}

TEST_F(StatusCodesTest, JoinGetsOrCreatesAJob) {
  shard::v1::JobSpec spec;
  spec.set_dataset_size(5);
  spec.set_world_size(1);
  shard::v1::JoinJobResponse joined;
  ASSERT_TRUE(Join("fresh", "solo", 1000, &joined, &spec).ok());
  EXPECT_TRUE(joined.world_formed());
  EXPECT_EQ(joined.rank(), 0u);
  EXPECT_EQ(joined.generation(), 1u);
  // Re-joining returns the same rank.
  ASSERT_TRUE(Join("fresh", "solo", 0, &joined, &spec).ok());
  EXPECT_EQ(joined.rank(), 0u);
}

TEST_F(StatusCodesTest, StreamValidatesStateAndPositions) {
  ExpectCode(Stream(StreamRequest(0)), StatusCode::FAILED_PRECONDITION,
             "join and wait");
  const uint64_t generation = FormWorld();
  ExpectCode(Stream(StreamRequest(generation + 1)), StatusCode::ABORTED,
             "re-join");
  auto request = StreamRequest(generation);
  request.set_rank(2);
  ExpectCode(Stream(request), StatusCode::INVALID_ARGUMENT, "world size 2");
  request = StreamRequest(generation);
  request.set_start_position(3);
  ExpectCode(Stream(request), StatusCode::INVALID_ARGUMENT, "multiple");
  request.set_start_position(12);
  ExpectCode(Stream(request), StatusCode::OUT_OF_RANGE, "past the end");
  request.set_start_position(10);  // Exactly the end: an empty stream.
  EXPECT_TRUE(Stream(request).ok());
  request = StreamRequest(generation);
  request.set_epoch(uint64_t{1} << 31);
  ExpectCode(Stream(request), StatusCode::INVALID_ARGUMENT, "epoch");
}

TEST_F(StatusCodesTest, PreviewValidatesRankAndOffset) {
  shard::v1::PreviewShardRequest request;
  request.set_job_id("job");
  request.set_rank(5);
  shard::v1::PreviewShardResponse response;
  {
    grpc::ClientContext context;
    ExpectCode(stub_->PreviewShard(&context, request, &response),
               StatusCode::INVALID_ARGUMENT, "rank 5");
  }
  request.set_rank(0);
  request.set_offset(6);
  {
    grpc::ClientContext context;
    ExpectCode(stub_->PreviewShard(&context, request, &response),
               StatusCode::OUT_OF_RANGE, "5 indices");
  }
  request.set_offset(0);
  request.set_limit(2000000);
  {
    grpc::ClientContext context;
    ExpectCode(stub_->PreviewShard(&context, request, &response),
               StatusCode::INVALID_ARGUMENT, "limit");
  }
}

TEST_F(StatusCodesTest, CommitIsIdempotentAndNeverGoesBack) {
  const uint64_t generation = FormWorld();  // N = 10, W = 2, pad: 10 positions
  auto commit = [&](uint64_t gen, uint64_t epoch, uint64_t position,
                    shard::v1::CommitProgressResponse* out) {
    shard::v1::CommitProgressRequest request;
    request.set_job_id("job");
    request.set_generation(gen);
    request.set_epoch(epoch);
    request.set_position(position);
    request.set_member_id("a");
    grpc::ClientContext context;
    return stub_->CommitProgress(&context, request, out);
  };
  shard::v1::CommitProgressResponse response;
  ASSERT_TRUE(commit(generation, 0, 4, &response).ok());
  EXPECT_EQ(response.committed_position(), 4u);
  EXPECT_TRUE(commit(generation, 0, 4, &response).ok());  // Idempotent.
  ExpectCode(commit(generation, 0, 2, &response),
             StatusCode::FAILED_PRECONDITION, "go back");
  ExpectCode(commit(generation, 0, 5, &response), StatusCode::INVALID_ARGUMENT,
             "multiple of the world size");
  ExpectCode(commit(generation, 0, 12, &response), StatusCode::INVALID_ARGUMENT,
             "epoch length 10");
  ExpectCode(commit(generation + 1, 0, 6, &response), StatusCode::ABORTED,
             "re-join");
  // The end of an epoch is the start of the next.
  ASSERT_TRUE(commit(generation, 0, 10, &response).ok());
  EXPECT_EQ(response.committed_epoch(), 1u);
  EXPECT_EQ(response.committed_position(), 0u);
  shard::v1::JoinJobResponse joined;
  ASSERT_TRUE(Join("job", "a", 0, &joined).ok());
  EXPECT_EQ(joined.committed_epoch(), 1u);
}

// CommitProgress and the store calls name a member of the generation's
// world: none named is FAILED_PRECONDITION, another job's member or one
// that joined no world PERMISSION_DENIED, and a refused call changes
// nothing.
TEST_F(StatusCodesTest, CommitAndStoreCallsAreAMembers) {
  const uint64_t generation = FormWorld();
  ASSERT_EQ(CreateJob("other", 10, 1).error_code(), StatusCode::OK);
  shard::v1::JoinJobResponse other;
  ASSERT_TRUE(Join("other", "stranger", 1000, &other).ok());
  auto commit = [&](const std::string& member) {
    shard::v1::CommitProgressRequest request;
    request.set_job_id("job");
    request.set_generation(generation);
    request.set_position(4);
    request.set_member_id(member);
    shard::v1::CommitProgressResponse response;
    grpc::ClientContext context;
    return stub_->CommitProgress(&context, request, &response);
  };
  auto set = [&](const std::string& member) {
    shard::v1::StoreSetRequest request;
    request.mutable_scope()->set_job_id("job");
    request.mutable_scope()->set_generation(generation);
    request.mutable_scope()->set_member_id(member);
    request.set_key("MASTER_ADDR");
    request.set_value("attacker:29500");
    shard::v1::StoreSetResponse response;
    grpc::ClientContext context;
    return stub_->StoreSet(&context, request, &response);
  };
  ExpectCode(commit(""), StatusCode::FAILED_PRECONDITION, "names no member");
  ExpectCode(commit("stranger"), StatusCode::PERMISSION_DENIED,
             "\"stranger\" holds no rank");
  ExpectCode(set(""), StatusCode::FAILED_PRECONDITION, "names no member");
  ExpectCode(set("stranger"), StatusCode::PERMISSION_DENIED, "holds no rank");

  shard::v1::GetJobRequest get;
  get.set_job_id("job");
  shard::v1::Job job;
  grpc::ClientContext get_context;
  ASSERT_TRUE(stub_->GetJob(&get_context, get, &job).ok());
  EXPECT_EQ(job.committed_position(), 0u);
  EXPECT_EQ(job.generation(), generation);
  shard::v1::StoreGetRequest read;
  read.mutable_scope()->set_job_id("job");
  read.mutable_scope()->set_generation(generation);
  read.mutable_scope()->set_member_id("a");
  read.set_key("MASTER_ADDR");
  shard::v1::StoreGetResponse value;
  grpc::ClientContext read_context;
  ASSERT_TRUE(stub_->StoreGet(&read_context, read, &value).ok());
  EXPECT_FALSE(value.found());
  // The members themselves are served.
  EXPECT_TRUE(commit("b").ok());
  EXPECT_TRUE(set("a").ok());
}

TEST_F(StatusCodesTest, StoreRequestsAreValidated) {
  const uint64_t generation = FormWorld();
  shard::v1::StoreSetRequest request;
  request.mutable_scope()->set_job_id("job");
  request.mutable_scope()->set_generation(generation);
  request.mutable_scope()->set_member_id("b");
  shard::v1::StoreSetResponse response;
  {
    grpc::ClientContext context;
    ExpectCode(stub_->StoreSet(&context, request, &response),
               StatusCode::INVALID_ARGUMENT, "key");
  }
  request.set_key("k");
  request.set_value(std::string((1 << 20) + 1, 'x'));
  {
    grpc::ClientContext context;
    ExpectCode(stub_->StoreSet(&context, request, &response),
               StatusCode::INVALID_ARGUMENT, "value");
  }
  request.set_value("not a number");
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->StoreSet(&context, request, &response).ok());
  }
  shard::v1::StoreAddRequest add;
  *add.mutable_scope() = request.scope();
  add.set_key("k");
  add.set_delta(1);
  shard::v1::StoreAddResponse added;
  grpc::ClientContext context;
  ExpectCode(stub_->StoreAdd(&context, add, &added),
             StatusCode::FAILED_PRECONDITION, "not an integer");
}

TEST_F(StatusCodesTest, DrainingAnswersUnavailableAndWakesWaitingJoins) {
  shard::v1::JoinJobResponse joined;
  grpc::Status waiting;
  std::atomic<bool> returned{false};
  // W = 2 and one member: its join waits (up to 10 minutes) for a world.
  std::thread joiner([&] {
    waiting = Join("job", "a", 600000, &joined);
    returned = true;
  });
  shard::v1::GetJobRequest get;
  get.set_job_id("job");
  for (int i = 0; i < 3000; ++i) {  // Bounded: until the member joined.
    absl::StatusOr<shard::v1::Job> job = cluster_.service().GetJob(get);
    if (job.ok() && job->joined_members() == 1) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_EQ(cluster_.service().GetJob(get)->joined_members(), 1u);
  EXPECT_FALSE(returned) << "the join did not wait: "
                         << waiting.error_message();
  cluster_.service().Drain();
  for (int i = 0; i < 3000 && !returned; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(returned) << "Drain did not wake the waiting join";
  joiner.join();
  ExpectCode(waiting, StatusCode::UNAVAILABLE, "draining");
  ExpectCode(CreateJob("other", 1, 1), StatusCode::UNAVAILABLE, "draining");
}

}  // namespace
}  // namespace shard
