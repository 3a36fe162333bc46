// shardd --auth-policy through real gRPC channels: the attack matrix
// (every RPC of shard.v1 x six callers x a job of the callers' tenant and
// one of another tenant), ListJobs showing only what a caller may view,
// a policy rotated while calls and a stream run, certificate identities
// next to tokens, and the tenants' quotas. Every denied call must change
// nothing: the jobs, their members, progress and rendezvous stores are compared
// before and after.
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/plan/batches/cost_digest.h"
#include "gtest/gtest.h"
#include "server/security/policy_file.h"
#include "server/security/policy_file_watch.h"
#include "server/security/policy_holder.h"
#include "shard/v1/shard.grpc.pb.h"
#include "tests/support/test_cluster.h"

namespace shard::testing {
namespace {

// The callers of the matrix, in its columns' order; tokens "tok-<name>".
enum Caller { kNone, kOtherMember, kOwnViewer, kOwnMember, kOwnAdmin, kOps };
constexpr const char* kCallerNames[] = {"none",     "b-member", "a-viewer",
                                        "a-member", "a-admin",  "ops"};
constexpr int kCallers = 6;

constexpr char kOwnJob[] = "team-a-job";    // Tenant A's.
constexpr char kOtherJob[] = "team-b-job";  // Tenant B's.

std::string Sha256Hex(const std::string& text) {
  const std::string command =
      absl::StrCat("printf %s '", text, "' | sha256sum | cut -c1-64");
  FILE* pipe = popen(command.c_str(), "r");
  char digest[65] = {};
  if (pipe == nullptr || fread(digest, 1, 64, pipe) != 64) std::abort();
  pclose(pipe);
  return digest;
}

std::string Principal(const std::string& name, const std::string& grants) {
  return absl::StrCat("  - name: ", name,
                      "\n    token_sha256: ", Sha256Hex("tok-" + name),
                      "\n    grants: ", grants, "\n");
}

// Tenants A and B; A has a viewer, a member and an admin, B a member; ops
// is the cluster admin. `extra` adds principals.
std::string PolicyText(const std::string& extra = "") {
  return absl::StrCat(
      "tenants:\n  - {name: team-a, jobs: \"team-a-*\"}\n"
      "  - {name: team-b, jobs: \"team-b-*\"}\nprincipals:\n",
      Principal("a-viewer", "[{role: viewer, jobs: \"team-a-*\"}]"),
      Principal("a-member", "[{role: member, jobs: \"team-a-*\"}]"),
      Principal("a-admin", "[{role: admin, jobs: \"team-a-*\"}]"),
      Principal("b-member", "[{role: member, jobs: \"team-b-*\"}]"),
      Principal("ops", "[{role: admin, jobs: \"*\"}]"), extra);
}

// A policy file in a directory of its own, loaded into a holder.
class PolicyFile {
 public:
  explicit PolicyFile(const std::string& text) {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("shard-policy-", getpid(), "-", ++count_);
    std::filesystem::create_directories(dir_);
    Write(text);
    holder_ = *security::PolicyHolder::Load(path());
  }
  ~PolicyFile() { std::filesystem::remove_all(dir_); }
  std::string path() const { return (dir_ / "policy.yaml").string(); }
  void Write(const std::string& text) const {
    const std::string next = path() + ".next";
    std::ofstream(next) << text;
    std::filesystem::rename(next, path());  // As a Secret's swap: atomic.
  }
  const std::shared_ptr<security::PolicyHolder>& holder() const {
    return holder_;
  }

 private:
  static inline int count_ = 0;
  std::filesystem::path dir_;
  std::shared_ptr<security::PolicyHolder> holder_;
};

// A member of a job, as its JoinJob named it.
struct Joined {
  std::string job_id;
  std::string member_id;
  uint64_t incarnation = 0;
  uint64_t generation = 0;
};

void Authorize(grpc::ClientContext& context, const std::string& caller) {
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  if (caller != "none")
    context.AddMetadata("authorization", "Bearer tok-" + caller);
}

shard::v1::JobSpec Spec() {
  shard::v1::JobSpec spec;
  spec.set_dataset_size(1000);
  spec.set_world_size(1);
  return spec;
}

// Makes one call of `rpc` as `caller` about `job` (whose member is
// `member`); its status.
class Calls {
 public:
  explicit Calls(shard::v1::Coordinator::Stub* stub) : stub_(stub) {}

  grpc::Status Make(const std::string& rpc, const std::string& caller,
                    const Joined& member) {
    grpc::ClientContext context;
    Authorize(context, caller);
    const std::string& job = member.job_id;
    shard::v1::StoreScope scope;
    scope.set_job_id(job);
    scope.set_generation(member.generation);
    scope.set_member_id(member.member_id);
    scope.set_incarnation(member.incarnation);
    if (rpc == "CreateJob") {
      shard::v1::CreateJobRequest request;
      request.set_job_id(job);
      *request.mutable_spec() = Spec();
      shard::v1::Job response;
      return stub_->CreateJob(&context, request, &response);
    }
    if (rpc == "GetJob") {
      shard::v1::GetJobRequest request;
      request.set_job_id(job);
      shard::v1::Job response;
      return stub_->GetJob(&context, request, &response);
    }
    if (rpc == "ListJobs") {
      shard::v1::ListJobsResponse response;
      return stub_->ListJobs(&context, {}, &response);
    }
    if (rpc == "JoinJob") {  // The member joining again: no change.
      shard::v1::JoinJobRequest request;
      request.set_job_id(job);
      request.set_member_id(member.member_id);
      request.set_incarnation(member.incarnation);
      shard::v1::JoinJobResponse response;
      return stub_->JoinJob(&context, request, &response);
    }
    if (rpc == "Heartbeat") {
      shard::v1::HeartbeatRequest request;
      request.set_job_id(job);
      request.set_member_id(member.member_id);
      request.set_generation(member.generation);
      request.set_incarnation(member.incarnation);
      shard::v1::HeartbeatResponse response;
      return stub_->Heartbeat(&context, request, &response);
    }
    if (rpc == "Leave") {  // A member that never joined: nothing to leave.
      shard::v1::LeaveRequest request;
      request.set_job_id(job);
      request.set_member_id("nobody");
      shard::v1::LeaveResponse response;
      return stub_->Leave(&context, request, &response);
    }
    if (rpc == "StreamShard") {
      shard::v1::StreamShardRequest request;
      request.set_job_id(job);
      request.set_generation(member.generation);
      auto reader = stub_->StreamShard(&context, request);
      shard::v1::IndexChunk chunk;
      while (reader->Read(&chunk)) {
      }
      return reader->Finish();
    }
    if (rpc == "PreviewShard") {
      shard::v1::PreviewShardRequest request;
      request.set_job_id(job);
      request.set_limit(10);
      shard::v1::PreviewShardResponse response;
      return stub_->PreviewShard(&context, request, &response);
    }
    if (rpc == "CommitProgress") {
      shard::v1::CommitProgressRequest request;
      request.set_job_id(job);
      request.set_generation(member.generation);
      request.set_position(++position_);
      request.set_member_id(member.member_id);
      request.set_incarnation(member.incarnation);
      shard::v1::CommitProgressResponse response;
      return stub_->CommitProgress(&context, request, &response);
    }
    return MakeStoreCall(rpc, context, scope, member);
  }

 private:
  grpc::Status MakeStoreCall(const std::string& rpc,
                             grpc::ClientContext& context,
                             const shard::v1::StoreScope& scope,
                             const Joined& member) {
    if (rpc == "StoreSet") {
      shard::v1::StoreSetRequest request;
      *request.mutable_scope() = scope;
      request.set_key("MASTER_ADDR");
      request.set_value("attacker.example:29500");
      shard::v1::StoreSetResponse response;
      return stub_->StoreSet(&context, request, &response);
    }
    if (rpc == "StoreGet") {
      shard::v1::StoreGetRequest request;
      *request.mutable_scope() = scope;
      request.set_key("k");
      shard::v1::StoreGetResponse response;
      return stub_->StoreGet(&context, request, &response);
    }
    if (rpc == "StoreAdd") {
      shard::v1::StoreAddRequest request;
      *request.mutable_scope() = scope;
      request.set_key("counter");
      request.set_delta(1);
      shard::v1::StoreAddResponse response;
      return stub_->StoreAdd(&context, request, &response);
    }
    if (rpc == "StoreCompareSet") {
      shard::v1::StoreCompareSetRequest request;
      *request.mutable_scope() = scope;
      request.set_key("k");
      request.set_expected("v");
      request.set_desired("v");  // Allowed: the same value, no change.
      shard::v1::StoreCompareSetResponse response;
      return stub_->StoreCompareSet(&context, request, &response);
    }
    if (rpc == "StoreWait") {
      shard::v1::StoreWaitRequest request;
      *request.mutable_scope() = scope;
      request.add_keys("k");
      shard::v1::StoreWaitResponse response;
      return stub_->StoreWait(&context, request, &response);
    }
    if (rpc == "StoreDelete") {
      shard::v1::StoreDeleteRequest request;
      *request.mutable_scope() = scope;
      request.set_key("not-there");
      shard::v1::StoreDeleteResponse response;
      return stub_->StoreDelete(&context, request, &response);
    }
    if (rpc == "StoreCount") {
      shard::v1::StoreCountRequest request;
      *request.mutable_scope() = scope;
      shard::v1::StoreCountResponse response;
      return stub_->StoreCount(&context, request, &response);
    }
    if (rpc == "DeleteJob") {  // Without force: its member is joined.
      shard::v1::DeleteJobRequest request;
      request.set_job_id(member.job_id);
      shard::v1::DeleteJobResponse response;
      return stub_->DeleteJob(&context, request, &response);
    }
    if (rpc == "PutCosts") {
      shard::v1::PutCostsRequest request;
      request.set_sha256(std::string(64, '0'));
      request.set_count(4);
      request.set_costs_le32(std::string(16, '\1'));
      shard::v1::PutCostsResponse response;
      return stub_->PutCosts(&context, request, &response);
    }
    if (rpc == "Drain") {  // The test server cannot be drained remotely.
      shard::v1::DrainResponse response;
      return stub_->Drain(&context, {}, &response);
    }
    ADD_FAILURE() << "no call made for " << rpc;
    return grpc::Status::CANCELLED;
  }

  shard::v1::Coordinator::Stub* stub_;
  uint64_t position_ = 0;
};

// 'A' allowed (past the authorization; the call may still fail for its
// own reasons), 'D' PERMISSION_DENIED by the policy, 'U' UNAUTHENTICATED.
char Outcome(const grpc::Status& status) {
  if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED) return 'U';
  if (status.error_code() == grpc::StatusCode::PERMISSION_DENIED &&
      status.error_message().find("--auth-policy") != std::string::npos) {
    return 'D';
  }
  return 'A';
}

// The matrix (docs/operations.md "Tenants" prints the same table): for each
// RPC, the outcome per caller (none, B's member, A's viewer, A's member, A's
// admin, ops) on A's job, then on B's. Calls that name no job (ListJobs,
// PutCosts, Drain) read the same in both.
struct Row {
  const char* rpc;
  const char* own_job;
  const char* other_job;
};
constexpr Row kMatrix[] = {
    {"CreateJob", "UDDADD", "UADDDD"},
    {"GetJob", "UDAAAA", "UADDDA"},
    {"ListJobs", "UAAAAA", "UAAAAA"},
    {"JoinJob", "UDDADD", "UADDDD"},
    {"Heartbeat", "UDDADD", "UADDDD"},
    {"Leave", "UDDADD", "UADDDD"},
    {"StreamShard", "UDDADD", "UADDDD"},
    {"PreviewShard", "UDAAAA", "UADDDA"},
    {"CommitProgress", "UDDADD", "UADDDD"},
    {"StoreSet", "UDDADD", "UADDDD"},
    {"StoreGet", "UDDADD", "UADDDD"},
    {"StoreAdd", "UDDADD", "UADDDD"},
    {"StoreCompareSet", "UDDADD", "UADDDD"},
    {"StoreWait", "UDDADD", "UADDDD"},
    {"StoreDelete", "UDDADD", "UADDDD"},
    {"StoreCount", "UDDADD", "UADDDD"},
    {"DeleteJob", "UDDDAA", "UDDDDA"},
    {"PutCosts", "UADADD", "UADADD"},
    {"Drain", "UDDDDA", "UDDDDA"},
};

class TenantAccessTest : public ::testing::Test {
 protected:
  TenantAccessTest() : policy_(PolicyText()) {}

  void StartServer(server::CoordinatorServerOptions options = {}) {
    options.auth_policy = policy_.holder();
    cluster_ =
        std::make_unique<TestCluster>(server::CoordinatorOptions{}, options);
    stub_ = cluster_->NewStub();
  }

  // `caller` creates and joins `job` (world size 1) and sets "k" = "v".
  Joined JoinAs(const std::string& caller, const std::string& job) {
    grpc::ClientContext context;
    Authorize(context, caller);
    shard::v1::JoinJobRequest request;
    request.set_job_id(job);
    request.set_member_id(caller + "-0");
    request.set_incarnation(77);
    *request.mutable_spec() = Spec();
    request.set_wait_for_world_ms(5000);
    shard::v1::JoinJobResponse response;
    const grpc::Status joined = stub_->JoinJob(&context, request, &response);
    EXPECT_TRUE(joined.ok()) << joined.error_message();
    Joined member{job, caller + "-0", 77, response.generation()};
    grpc::ClientContext set_context;
    Authorize(set_context, caller);
    shard::v1::StoreSetRequest set;
    set.mutable_scope()->set_job_id(job);
    set.mutable_scope()->set_generation(member.generation);
    set.mutable_scope()->set_member_id(member.member_id);
    set.mutable_scope()->set_incarnation(member.incarnation);
    set.set_key("k");
    set.set_value("v");
    shard::v1::StoreSetResponse set_response;
    EXPECT_TRUE(stub_->StoreSet(&set_context, set, &set_response).ok());
    return member;
  }

  // Everything a denied call could change, as the cluster admin and the
  // jobs' own members read it.
  std::string Snapshot(const std::vector<Joined>& members) {
    grpc::ClientContext context;
    Authorize(context, "ops");
    shard::v1::ListJobsResponse jobs;
    EXPECT_TRUE(stub_->ListJobs(&context, {}, &jobs).ok());
    std::string snapshot = jobs.SerializeAsString();
    for (const Joined& member : members) {
      const std::string caller =
          member.job_id == kOwnJob ? "a-member" : "b-member";
      for (const char* key : {"k", "MASTER_ADDR", "counter"}) {
        grpc::ClientContext get_context;
        Authorize(get_context, caller);
        shard::v1::StoreGetRequest get;
        get.mutable_scope()->set_job_id(member.job_id);
        get.mutable_scope()->set_generation(member.generation);
        get.mutable_scope()->set_member_id(member.member_id);
        get.mutable_scope()->set_incarnation(member.incarnation);
        get.set_key(key);
        shard::v1::StoreGetResponse value;
        EXPECT_TRUE(stub_->StoreGet(&get_context, get, &value).ok());
        absl::StrAppend(&snapshot, "|", key, "=", value.found(), ":",
                        value.value());
      }
    }
    return snapshot;
  }

  // The jobs ListJobs shows `caller`, comma-separated.
  std::string Listed(const std::string& caller) {
    grpc::ClientContext context;
    Authorize(context, caller);
    shard::v1::ListJobsResponse jobs;
    const grpc::Status status = stub_->ListJobs(&context, {}, &jobs);
    if (!status.ok()) return "error";
    std::string listed;
    for (const shard::v1::Job& job : jobs.jobs()) {
      absl::StrAppend(&listed, listed.empty() ? "" : ",", job.job_id());
    }
    return listed;
  }

  PolicyFile policy_;
  std::unique_ptr<TestCluster> cluster_;
  std::unique_ptr<shard::v1::Coordinator::Stub> stub_;
};

TEST_F(TenantAccessTest, AttackMatrix) {
  StartServer();
  const std::vector<Joined> members = {JoinAs("a-member", kOwnJob),
                                       JoinAs("b-member", kOtherJob)};
  Calls calls(stub_.get());
  int denied = 0;
  for (const Row& row : kMatrix) {
    for (int job = 0; job < 2; ++job) {
      const char* expected = job == 0 ? row.own_job : row.other_job;
      for (int caller = 0; caller < kCallers; ++caller) {
        const std::string before = Snapshot(members);
        const grpc::Status status =
            calls.Make(row.rpc, kCallerNames[caller], members[job]);
        const char outcome = Outcome(status);
        EXPECT_EQ(outcome, expected[caller])
            << row.rpc << " by " << kCallerNames[caller] << " on "
            << members[job].job_id << ": " << status.error_code() << " "
            << status.error_message();
        if (outcome != 'A') {
          ++denied;
          EXPECT_EQ(Snapshot(members), before)
              << "a refused " << row.rpc << " by " << kCallerNames[caller]
              << " on " << members[job].job_id << " changed the state";
        }
      }
    }
  }
  EXPECT_GT(denied, 100);
  // A denial names the job and the role missing.
  grpc::ClientContext context;
  Authorize(context, "b-member");
  shard::v1::GetJobRequest request;
  request.set_job_id(kOwnJob);
  shard::v1::Job job;
  EXPECT_EQ(stub_->GetJob(&context, request, &job).error_message(),
            "principal 'b-member' may not call GetJob on job 'team-a-job': it "
            "needs the viewer role on that job (shardd --auth-policy)");
}

TEST_F(TenantAccessTest, ListJobsShowsOnlyWhatTheCallerMayView) {
  StartServer();
  JoinAs("a-member", kOwnJob);
  JoinAs("b-member", kOtherJob);
  EXPECT_EQ(Listed("a-member"), "team-a-job");
  EXPECT_EQ(Listed("a-viewer"), "team-a-job");
  EXPECT_EQ(Listed("a-admin"), "team-a-job");
  EXPECT_EQ(Listed("b-member"), "team-b-job");
  EXPECT_EQ(Listed("ops"), "team-a-job,team-b-job");
  EXPECT_EQ(Listed("none"), "error");
  EXPECT_EQ(Listed("stranger"), "error");  // A token the policy lacks.
}

// A stub whose channel buffers little (64 KiB, no BDP growth), so that a
// stream the test reads slowly is still being written when it looks.
std::unique_ptr<shard::v1::Coordinator::Stub> SmallWindowStub(
    const std::string& address) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 65536);
  return shard::v1::Coordinator::NewStub(grpc::CreateCustomChannel(
      address, grpc::InsecureChannelCredentials(), args));
}

// A rotation revokes B and adds tenant C while A's calls run: A never
// notices, B's open stream ends at its next chunk with PERMISSION_DENIED
// and its next call is refused, C is let in; a broken file then changes
// nothing; the file watch picks up the next rotation by itself.
TEST_F(TenantAccessTest, ARotationRevokesAndAddsWhileCallsRun) {
  StartServer();
  JoinAs("a-member", kOwnJob);
  // B's member streams a job of 1,000,000 shuffled indices in chunks of
  // 1,024 and reads one chunk.
  auto b_stub = SmallWindowStub(cluster_->address());
  Joined b_member;
  {
    grpc::ClientContext context;
    Authorize(context, "b-member");
    shard::v1::JoinJobRequest request;
    request.set_job_id("team-b-big");
    request.set_member_id("b-0");
    request.set_incarnation(1);
    *request.mutable_spec() = Spec();
    request.mutable_spec()->set_dataset_size(1000000);
    request.set_wait_for_world_ms(5000);
    shard::v1::JoinJobResponse response;
    ASSERT_TRUE(b_stub->JoinJob(&context, request, &response).ok());
    b_member = {"team-b-big", "b-0", 1, response.generation()};
  }
  grpc::ClientContext stream_context;
  Authorize(stream_context, "b-member");
  stream_context.set_deadline(std::chrono::system_clock::now() +
                              std::chrono::seconds(60));
  shard::v1::StreamShardRequest open;
  open.set_job_id(b_member.job_id);
  open.set_generation(b_member.generation);
  open.set_max_chunk_indices(1024);
  auto reader = b_stub->StreamShard(&stream_context, open);
  shard::v1::IndexChunk chunk;
  ASSERT_TRUE(reader->Read(&chunk));

  // A's member keeps calling through the rotation.
  std::atomic<bool> rotating{true};
  std::atomic<int> a_calls{0}, a_failures{0};
  std::thread a_caller([&] {
    auto stub = cluster_->NewStub();
    while (rotating.load()) {
      grpc::ClientContext context;
      Authorize(context, "a-member");
      shard::v1::GetJobRequest request;
      request.set_job_id(kOwnJob);
      shard::v1::Job job;
      if (!stub->GetJob(&context, request, &job).ok()) ++a_failures;
      ++a_calls;
    }
  });
  while (a_calls.load() < 20) absl::SleepFor(absl::Milliseconds(1));
  std::string rotated =
      PolicyText(Principal("c-member", "[{role: member, jobs: \"team-c-*\"}]"));
  const std::string b_line =
      Principal("b-member", "[{role: member, jobs: \"team-b-*\"}]");
  rotated.erase(rotated.find(b_line), b_line.size());
  policy_.Write(rotated);
  ASSERT_TRUE(policy_.holder()->Reload().ok());
  const int calls_at_rotation = a_calls.load();
  while (a_calls.load() < calls_at_rotation + 20) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  rotating = false;
  a_caller.join();
  EXPECT_EQ(a_failures.load(), 0);

  uint64_t chunks_after = 0;
  while (reader->Read(&chunk)) ++chunks_after;
  const grpc::Status ended = reader->Finish();
  EXPECT_EQ(ended.error_code(), grpc::StatusCode::PERMISSION_DENIED)
      << ended.error_message();
  EXPECT_NE(ended.error_message().find("revoked"), std::string::npos)
      << ended.error_message();
  EXPECT_LT(chunks_after, 900u);  // Of 977: it ended early.
  EXPECT_EQ(Listed("b-member"), "error");
  JoinAs("c-member", "team-c-job");
  EXPECT_EQ(Listed("c-member"), "team-c-job");

  // A broken file is refused with its line; the policy stays.
  policy_.Write("principals:\n  - name: x\n    grants: [\n");
  const absl::Status refused = policy_.holder()->Reload();
  EXPECT_TRUE(absl::IsInvalidArgument(refused));
  EXPECT_NE(refused.message().find(policy_.path() + ":4:"), std::string::npos)
      << refused;
  EXPECT_EQ(Listed("c-member"), "team-c-job");

  // The watch re-reads a changed file by itself (B is back).
  security::PolicyFileWatch watch(policy_.holder(), absl::Milliseconds(20));
  policy_.Write(PolicyText());
  for (int i = 0; i < 500 && Listed("b-member") == "error"; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(Listed("b-member"), "team-b-big");
  EXPECT_EQ(Listed("c-member"), "error");
}

// Certificate identities and tokens on one coordinator: a URI SAN, a
// DNS SAN or the subject CN names a principal; a call that carries a
// token is the token's principal.
TEST(TenantIdentityTest, CertificatesAndTokensNamePrincipals) {
  const std::string pki = ::testing::TempDir() + "/tenant-pki";
  ASSERT_EQ(std::system(absl::StrCat(SHARD_SOURCE_DIR,
                                     "/tests/support/make_test_certs.sh ", pki)
                            .c_str()),
            0);
  PolicyFile policy(absl::StrCat(
      "principals:\n"
      "  - {name: a-by-cn, identity: trainer,"
      " grants: [{role: member, jobs: \"team-a-*\"}]}\n"
      "  - {name: b-by-uri, identity: \"spiffe://shard.test/team-b/trainer\","
      " grants: [{role: member, jobs: \"team-b-*\"}]}\n",
      Principal("ops", "[{role: admin, jobs: \"*\"}]")));
  server::CoordinatorServerOptions options;
  options.tls_cert_file = pki + "/server.pem";
  options.tls_key_file = pki + "/server.key";
  options.auth_policy = policy.holder();
  // Identities need --tls-client-ca, which verifies them.
  EXPECT_TRUE(absl::IsInvalidArgument(
      server::CoordinatorServer::Start(nullptr, options).status()));
  options.tls_client_ca_file = pki + "/ca.pem";
  TestCluster cluster({}, options);
  const std::string address = absl::StrCat(
      "localhost:", cluster.address().substr(cluster.address().rfind(':') + 1));
  auto stub_with = [&](const std::string& cert) {
    grpc::SslCredentialsOptions ssl;
    auto read = [](const std::string& path) {
      std::ifstream in(path);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    ssl.pem_root_certs = read(pki + "/ca.pem");
    ssl.pem_cert_chain = read(pki + "/" + cert + ".pem");
    ssl.pem_private_key = read(pki + "/" + cert + ".key");
    return shard::v1::Coordinator::NewStub(
        grpc::CreateChannel(address, grpc::SslCredentials(ssl)));
  };
  auto create = [](shard::v1::Coordinator::Stub& stub, const std::string& job,
                   const std::string& token) {
    grpc::ClientContext context;
    Authorize(context, token);
    shard::v1::CreateJobRequest request;
    request.set_job_id(job);
    *request.mutable_spec() = Spec();
    shard::v1::Job created;
    return stub.CreateJob(&context, request, &created).error_code();
  };
  auto by_cn = stub_with("client");
  auto by_uri = stub_with("spiffe");
  EXPECT_EQ(create(*by_cn, "team-a-1", "none"), grpc::StatusCode::OK);
  EXPECT_EQ(create(*by_cn, "team-b-1", "none"),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(create(*by_uri, "team-b-1", "none"), grpc::StatusCode::OK);
  EXPECT_EQ(create(*by_uri, "team-a-2", "none"),
            grpc::StatusCode::PERMISSION_DENIED);
  // The token decides when a call carries one: ops may not create jobs.
  EXPECT_EQ(create(*by_cn, "team-a-3", "ops"),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(create(*by_cn, "team-a-3", "stranger"),
            grpc::StatusCode::UNAUTHENTICATED);
  // A DNS SAN names a principal too (the URI SAN is no longer listed).
  policy.Write(
      absl::StrCat("principals:\n"
                   "  - {name: b-by-dns, identity: trainer-b.shard.test,"
                   " grants: [{role: member, jobs: \"team-b-*\"}]}\n"));
  ASSERT_TRUE(policy.holder()->Reload().ok());
  EXPECT_EQ(create(*by_uri, "team-b-2", "none"), grpc::StatusCode::OK);
  EXPECT_EQ(create(*by_cn, "team-a-4", "none"),
            grpc::StatusCode::UNAUTHENTICATED);
  std::filesystem::remove_all(pki);
}

// The example the docs and the tenants overlay ship is a valid policy.
TEST(TenantPolicyExampleTest, TheShippedExampleLoads) {
  absl::StatusOr<security::AccessPolicy> example =
      security::ReadPolicyFile(absl::StrCat(
          SHARD_SOURCE_DIR, "/deploy/overlays/tenants/policy.example.yaml"));
  ASSERT_TRUE(example.ok()) << example.status();
  EXPECT_EQ(example->principals().size(), 4u);
  EXPECT_EQ(example->tenants().size(), 2u);
}

// Tenant A has a quota of every resource; tenant B has none. A fills
// each quota and is refused RESOURCE_EXHAUSTED naming it, while B's
// creates, joins, rendezvous, waits and uploads at the same moment all
// succeed; B still meets the coordinator's global store budget.
class TenantQuotaTest : public ::testing::Test {
 protected:
  TenantQuotaTest()
      : policy_(absl::StrCat(
            "tenants:\n"
            "  - name: team-a\n"
            "    jobs: \"team-a-*\"\n"
            "    quota: {jobs: 2, ranks: 3, store_bytes: 4096,"
            " cost_bytes: 5000, waiting_calls: 2}\n"
            "  - {name: team-b, jobs: \"team-b-*\"}\nprincipals:\n",
            Principal("a-member", "[{role: member, jobs: \"team-a-*\"}]"),
            Principal("b-member", "[{role: member, jobs: \"team-b-*\"}]"))) {
    server::CoordinatorOptions options;
    options.tenant_limits_of = security::TenantLimitsFrom(policy_.holder());
    options.rendezvous.max_total_bytes = 32 << 10;
    server::CoordinatorServerOptions server_options;
    server_options.auth_policy = policy_.holder();
    cluster_ = std::make_unique<TestCluster>(options, server_options);
    stub_ = cluster_->NewStub();
  }

  // `caller` joins `job` (created with `world_size` ranks) as `member`.
  grpc::Status Join(const std::string& caller, const std::string& job,
                    const std::string& member, uint32_t world_size,
                    Joined* joined = nullptr) {
    grpc::ClientContext context;
    Authorize(context, caller);
    shard::v1::JoinJobRequest request;
    request.set_job_id(job);
    request.set_member_id(member);
    request.set_incarnation(5);
    *request.mutable_spec() = Spec();
    request.mutable_spec()->set_world_size(world_size);
    shard::v1::JoinJobResponse response;
    grpc::Status status = stub_->JoinJob(&context, request, &response);
    if (joined != nullptr) *joined = {job, member, 5, response.generation()};
    return status;
  }

  grpc::Status Set(const std::string& caller, const Joined& member,
                   const std::string& key, size_t value_bytes) {
    grpc::ClientContext context;
    Authorize(context, caller);
    shard::v1::StoreSetRequest request;
    *request.mutable_scope() = ScopeOf(member);
    request.set_key(key);
    request.set_value(std::string(value_bytes, 'x'));
    shard::v1::StoreSetResponse response;
    return stub_->StoreSet(&context, request, &response);
  }

  grpc::Status Get(const std::string& caller, const Joined& member,
                   const std::string& key, uint32_t wait_ms) {
    grpc::ClientContext context;
    Authorize(context, caller);
    shard::v1::StoreGetRequest request;
    *request.mutable_scope() = ScopeOf(member);
    request.set_key(key);
    request.set_wait_ms(wait_ms);
    shard::v1::StoreGetResponse response;
    return stub_->StoreGet(&context, request, &response);
  }

  // Uploads `count` costs (all equal to `value`) in one piece.
  grpc::Status Upload(const std::string& caller, uint32_t count,
                      uint32_t value) {
    std::string le32;
    for (uint32_t i = 0; i < count; ++i) {
      for (int byte = 0; byte < 4; ++byte) le32.push_back(value >> (8 * byte));
    }
    grpc::ClientContext context;
    Authorize(context, caller);
    shard::v1::PutCostsRequest request;
    request.set_sha256(plan::Sha256Hex(le32));
    request.set_count(count);
    request.set_costs_le32(le32);
    shard::v1::PutCostsResponse response;
    return stub_->PutCosts(&context, request, &response);
  }

  static shard::v1::StoreScope ScopeOf(const Joined& member) {
    shard::v1::StoreScope scope;
    scope.set_job_id(member.job_id);
    scope.set_generation(member.generation);
    scope.set_member_id(member.member_id);
    scope.set_incarnation(member.incarnation);
    return scope;
  }

  // The status is RESOURCE_EXHAUSTED for team A's quota of `resource`.
  static void ExpectQuota(const grpc::Status& status,
                          const std::string& resource) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
        << status.error_message();
    EXPECT_NE(status.error_message().find(
                  "tenant 'team-a' (jobs \"team-a-*\") is at its quota of " +
                  resource),
              std::string::npos)
        << status.error_message();
  }

  PolicyFile policy_;
  std::unique_ptr<TestCluster> cluster_;
  std::unique_ptr<shard::v1::Coordinator::Stub> stub_;
};

TEST_F(TenantQuotaTest, OneTenantAtItsQuotasLeavesTheOthersTheirRoom) {
  // Jobs (2) and ranks (3).
  Joined a_member, b_member;
  ASSERT_TRUE(Join("a-member", "team-a-1", "a-1", 1, &a_member).ok());
  ASSERT_TRUE(Join("a-member", "team-a-2", "a-2", 3).ok());
  ASSERT_TRUE(Join("a-member", "team-a-2", "a-3", 3).ok());
  ExpectQuota(Join("a-member", "team-a-3", "a-4", 1), "jobs");
  ExpectQuota(Join("a-member", "team-a-2", "a-4", 3), "ranks");
  for (int job = 1; job <= 3; ++job) {
    EXPECT_TRUE(Join("b-member", absl::StrCat("team-b-", job), "b", 1,
                     job == 1 ? &b_member : nullptr)
                    .ok());
  }
  // A member joining again takes no new rank.
  EXPECT_TRUE(Join("a-member", "team-a-2", "a-3", 3).ok());

  // Waiting calls (2): two of A's gets wait; a third is refused, B's waits.
  std::vector<std::thread> waiting;
  std::atomic<int> answered{0};
  for (int i = 0; i < 2; ++i) {
    waiting.emplace_back([&] {
      if (Get("a-member", a_member, "later", 20000).ok()) ++answered;
    });
  }
  const server::TenantLimits& team_a =
      policy_.holder()->Current()->tenants().front();
  while (cluster_->service().UsageOf(team_a).waiting_calls < 2) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  ExpectQuota(Get("a-member", a_member, "later", 20000), "waiting_calls");
  EXPECT_TRUE(Get("b-member", b_member, "later", 50).ok());
  ASSERT_TRUE(Set("a-member", a_member, "later", 1).ok());
  for (std::thread& thread : waiting) thread.join();
  EXPECT_EQ(answered.load(), 2);

  // Store bytes (4,096): each key holds 1,000 + its name + 96 bytes.
  int stored = 0;
  grpc::Status set;
  while (
      (set = Set("a-member", a_member, absl::StrCat("k", stored), 1000)).ok()) {
    ++stored;
  }
  // "later" holds 102 bytes, each kN 1,098: a fourth kN would pass 4,096.
  EXPECT_EQ(stored, 3);
  ExpectQuota(set, "store_bytes");
  EXPECT_TRUE(Set("b-member", b_member, "k0", 1000).ok());

  // Cost bytes (5,000): an upload of 1,000 costs stages 4,000 bytes and
  // keeps a table of 2,000 (u16); a second upload would hold 6,000.
  EXPECT_TRUE(Upload("a-member", 1000, 7).ok());
  ExpectQuota(Upload("a-member", 1000, 8), "cost_bytes");
  EXPECT_TRUE(Upload("b-member", 1000, 8).ok());

  const server::TenantUsage usage = cluster_->service().UsageOf(team_a);
  EXPECT_EQ(usage.jobs, 2u);
  EXPECT_EQ(usage.ranks, 3u);
  EXPECT_LE(usage.store_bytes, 4096u);
  EXPECT_EQ(usage.cost_bytes, 2000u);
  EXPECT_EQ(usage.waiting_calls, 0u);
  const auto refusals = policy_.holder()->quota_refusals().Counts();
  for (const char* resource :
       {"jobs", "ranks", "waiting_calls", "store_bytes", "cost_bytes"}) {
    EXPECT_EQ(refusals.at({"team-a", resource}), 1u) << resource;
  }

  // B has no quota, but the coordinator's budget (32 KiB) still holds.
  int b_keys = 1;
  while (
      (set = Set("b-member", b_member, absl::StrCat("k", b_keys), 1000)).ok()) {
    ++b_keys;
  }
  EXPECT_EQ(set.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(set.error_message().find("--store-max-bytes"), std::string::npos)
      << set.error_message();
  EXPECT_LT(b_keys, 33);
}

}  // namespace
}  // namespace shard::testing
