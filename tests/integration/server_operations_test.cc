// The server's operational surface through real gRPC channels: TLS and
// mutual TLS, bearer tokens, the health service across a drain, a role
// change (the service taken out, another installed), the request size
// limit and the admin RPCs (DeleteJob, Drain).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "shard/client/coordinator_channel.h"
#include "shard/client/coordinator_client.h"
#include "shard/v1/shard.grpc.pb.h"
#include "tests/support/grpc_probes.h"
#include "tests/support/test_cluster.h"

namespace shard::testing {
namespace {

constexpr char kToken[] = "s3cret-token-for-tests";

// A throwaway PKI (tests/support/make_test_certs.sh) and a token file.
class Secrets {
 public:
  Secrets() {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("shard-secrets-", getpid());
    const std::string command = absl::StrCat(
        SHARD_SOURCE_DIR, "/tests/support/make_test_certs.sh ", dir_.string());
    if (std::system(command.c_str()) != 0) std::abort();
    std::ofstream(Path("token")) << kToken << "\n";
    std::ofstream(Path("wrong-token")) << "not-the-token\n";
    for (const char* secret : {"token", "wrong-token"}) {
      std::filesystem::permissions(Path(secret),
                                   std::filesystem::perms::owner_read |
                                       std::filesystem::perms::owner_write);
    }
  }
  ~Secrets() { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const {
    return (dir_ / name).string();
  }

 private:
  std::filesystem::path dir_;
};

const Secrets& TestSecrets() {
  static const Secrets* secrets = new Secrets();
  return *secrets;
}

// ListJobs through a client with `security`; the status code it got.
absl::StatusCode ListJobsWith(const std::string& address,
                              const client::ChannelSecurity& security) {
  client::ClientOptions options;
  options.address = address;
  options.security = security;
  options.rpc_timeout = absl::Seconds(5);
  options.retry.deadline = absl::ZeroDuration();
  auto client = client::CoordinatorClient::Connect(options);
  if (!client.ok()) return client.status().code();
  return (*client)->ListJobs().status().code();
}

client::ChannelSecurity WithCa(const std::string& ca) {
  client::ChannelSecurity security;
  security.tls_ca_file = TestSecrets().Path(ca);
  return security;
}

server::CoordinatorServerOptions TlsServer() {
  server::CoordinatorServerOptions options;
  options.tls_cert_file = TestSecrets().Path("server.pem");
  options.tls_key_file = TestSecrets().Path("server.key");
  return options;
}

TEST(ServerOperationsTest, TlsNeedsTheRightCa) {
  TestCluster cluster({}, TlsServer());
  // The certificate names localhost; connect by that name.
  const std::string address = absl::StrCat(
      "localhost:", cluster.address().substr(cluster.address().rfind(':') + 1));
  EXPECT_EQ(ListJobsWith(address, {}), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ListJobsWith(address, WithCa("other-ca.pem")),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(ListJobsWith(address, WithCa("ca.pem")), absl::StatusCode::kOk);
}

TEST(ServerOperationsTest, MutualTlsRefusesClientsWithoutCertificate) {
  server::CoordinatorServerOptions options = TlsServer();
  options.tls_client_ca_file = TestSecrets().Path("ca.pem");
  TestCluster cluster({}, options);
  const std::string address = absl::StrCat(
      "localhost:", cluster.address().substr(cluster.address().rfind(':') + 1));
  EXPECT_EQ(ListJobsWith(address, WithCa("ca.pem")),
            absl::StatusCode::kUnavailable);
  client::ChannelSecurity with_cert = WithCa("ca.pem");
  with_cert.tls_cert_file = TestSecrets().Path("client.pem");
  with_cert.tls_key_file = TestSecrets().Path("client.key");
  EXPECT_EQ(ListJobsWith(address, with_cert), absl::StatusCode::kOk);
}

TEST(ServerOperationsTest, InconsistentTlsFilesAreRefusedUpFront) {
  server::CoordinatorServerOptions options;
  options.tls_cert_file = TestSecrets().Path("server.pem");
  auto service = std::make_shared<BlockingCoordinator>();
  EXPECT_TRUE(absl::IsInvalidArgument(
      server::CoordinatorServer::Start(service, options).status()));
  options.tls_key_file = TestSecrets().Path("token");  // Not PEM.
  EXPECT_TRUE(absl::IsInvalidArgument(
      server::CoordinatorServer::Start(service, options).status()));
  // A key of another certificate: a bad flag naming both files, not a
  // listener that fails to start (shardd exits 2 on INVALID_ARGUMENT).
  options.tls_key_file = TestSecrets().Path("client.key");
  const absl::Status mismatched =
      server::CoordinatorServer::Start(service, options).status();
  EXPECT_TRUE(absl::IsInvalidArgument(mismatched)) << mismatched;
  EXPECT_NE(mismatched.message().find("client.key is not the key of the "
                                      "certificate in --tls-cert"),
            std::string::npos)
      << mismatched;
  EXPECT_NE(mismatched.message().find("server.pem"), std::string::npos)
      << mismatched;
  client::ChannelSecurity cert_without_ca;
  cert_without_ca.tls_cert_file = TestSecrets().Path("client.pem");
  cert_without_ca.tls_key_file = TestSecrets().Path("client.key");
  EXPECT_EQ(ListJobsWith("127.0.0.1:1", cert_without_ca),
            absl::StatusCode::kInvalidArgument);
}

TEST(ServerOperationsTest, EveryCallNeedsTheBearerToken) {
  server::CoordinatorServerOptions options;
  options.auth_token_file = TestSecrets().Path("token");
  TestCluster cluster({}, options);
  EXPECT_EQ(ListJobsWith(cluster.address(), {}),
            absl::StatusCode::kUnauthenticated);
  client::ChannelSecurity wrong;
  wrong.auth_token_file = TestSecrets().Path("wrong-token");
  EXPECT_EQ(ListJobsWith(cluster.address(), wrong),
            absl::StatusCode::kUnauthenticated);
  client::ChannelSecurity right;
  right.auth_token_file = TestSecrets().Path("token");
  EXPECT_EQ(ListJobsWith(cluster.address(), right), absl::StatusCode::kOk);

  // A streaming call is guarded too.
  auto stub = cluster.NewStub();
  grpc::ClientContext context;
  shard::v1::StreamShardRequest request;
  request.set_job_id("j");
  auto reader = stub->StreamShard(&context, request);
  shard::v1::IndexChunk chunk;
  while (reader->Read(&chunk)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::UNAUTHENTICATED);

  // Probes carry no token: the health service stays open.
  EXPECT_EQ(
      *CheckHealth(grpc::CreateChannel(cluster.address(),
                                       grpc::InsecureChannelCredentials()),
                   ""),
      Health::kServing);
}

// --admin-token-file: delete-job and drain need the admin token; a
// member's token is refused (PERMISSION_DENIED), and member calls take
// either token.
TEST(ServerOperationsTest, AdminCallsNeedTheAdminToken) {
  server::CoordinatorServerOptions options;
  options.auth_token_file = TestSecrets().Path("token");
  options.admin_token_file = TestSecrets().Path("wrong-token");
  bool drain_requested = false;
  options.on_drain_requested = [&] { drain_requested = true; };
  TestCluster cluster({}, options);
  client::ChannelSecurity member;
  member.auth_token_file = TestSecrets().Path("token");
  client::ChannelSecurity admin;
  admin.auth_token_file = TestSecrets().Path("wrong-token");
  EXPECT_EQ(ListJobsWith(cluster.address(), member), absl::StatusCode::kOk);
  EXPECT_EQ(ListJobsWith(cluster.address(), admin), absl::StatusCode::kOk);
  EXPECT_EQ(ListJobsWith(cluster.address(), {}),
            absl::StatusCode::kUnauthenticated);

  auto connect = [&](const client::ChannelSecurity& security) {
    client::ClientOptions client_options;
    client_options.address = cluster.address();
    client_options.security = security;
    client_options.retry.deadline = absl::ZeroDuration();
    return *client::CoordinatorClient::Connect(client_options);
  };
  const absl::Status member_delete = connect(member)->DeleteJob("j", true);
  EXPECT_EQ(member_delete.code(), absl::StatusCode::kPermissionDenied)
      << member_delete;
  EXPECT_NE(member_delete.message().find("--admin-token-file"),
            std::string::npos);
  EXPECT_EQ(connect({})->DeleteJob("j", true).code(),
            absl::StatusCode::kUnauthenticated);
  // Past authentication: the job does not exist.
  EXPECT_EQ(connect(admin)->DeleteJob("j", true).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(connect(member)->Drain().status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_FALSE(drain_requested);
  EXPECT_TRUE(connect(admin)->Drain().ok());
  EXPECT_TRUE(drain_requested);
}

TEST(ServerOperationsTest, HealthTurnsNotServingOnDrain) {
  bool drain_requested = false;
  server::CoordinatorServerOptions options = TlsServer();
  options.health_listen = "127.0.0.1:0";
  options.on_drain_requested = [&] { drain_requested = true; };
  options.shutdown_grace = absl::Seconds(7);
  TestCluster cluster({}, options);
  // The plaintext health listener, as a Kubernetes gRPC probe uses it.
  auto channel = grpc::CreateChannel(cluster.server().health_address(),
                                     grpc::InsecureChannelCredentials());
  EXPECT_EQ(*CheckHealth(channel, ""), Health::kServing);
  EXPECT_EQ(*CheckHealth(channel, "shard.v1.Coordinator"), Health::kServing);
  EXPECT_EQ(*CheckHealth(channel, "liveness"), Health::kServing);

  client::ClientOptions client_options;
  client_options.address =
      "localhost:" + cluster.address().substr(cluster.address().rfind(':') + 1);
  client_options.security = WithCa("ca.pem");
  client_options.retry.deadline = absl::ZeroDuration();
  auto client = *client::CoordinatorClient::Connect(client_options);
  absl::StatusOr<absl::Duration> grace = client->Drain();
  ASSERT_TRUE(grace.ok()) << grace.status();
  EXPECT_EQ(*grace, absl::Seconds(7));
  EXPECT_TRUE(drain_requested);
  EXPECT_EQ(*CheckHealth(channel, ""), Health::kNotServing);
  EXPECT_EQ(*CheckHealth(channel, "shard.v1.Coordinator"), Health::kNotServing);
  // A draining server is alive: a liveness probe must not restart it.
  EXPECT_EQ(*CheckHealth(channel, "liveness"), Health::kServing);
  // Coordinator calls now answer UNAVAILABLE (clients retry elsewhere).
  EXPECT_TRUE(absl::IsUnavailable(client->ListJobs().status()));
  // The health listener serves nothing else.
  auto health_only = shard::v1::Coordinator::NewStub(channel);
  grpc::ClientContext context;
  shard::v1::ListJobsResponse jobs;
  EXPECT_EQ(health_only->ListJobs(&context, {}, &jobs).error_code(),
            grpc::UNIMPLEMENTED);
}

// A replica's role change: the one server stays on its port while what it
// serves is taken out and another installed. The service taken out answers
// its waiting call and its stream UNAVAILABLE (the stream at its next
// chunk, not at the end of its shard), is let go by every call, and the
// next one serves on the same address.
TEST(ServerOperationsTest, AServiceTakenOutEndsItsCallsAndTheNextServes) {
  server::CoordinatorServerOptions options;
  options.listen = "127.0.0.1:0";
  auto server = *server::CoordinatorServer::Start(nullptr, options);
  auto channel = grpc::CreateChannel(server->address(),
                                     grpc::InsecureChannelCredentials());
  auto stub = shard::v1::Coordinator::NewStub(channel);
  const auto list_jobs = [&stub] {
    grpc::ClientContext context;
    shard::v1::ListJobsResponse jobs;
    const grpc::Status status = stub->ListJobs(&context, {}, &jobs);
    return status.ok() ? jobs.jobs_size() : -status.error_code();
  };
  EXPECT_EQ(list_jobs(), -grpc::UNAVAILABLE);  // Nothing serves yet.
  EXPECT_EQ(*CheckHealth(channel, ""), Health::kNotServing);

  auto first = std::make_shared<BlockingCoordinator>();
  server->Serve(first);
  EXPECT_EQ(*CheckHealth(channel, ""), Health::kServing);
  shard::v1::JoinJobRequest join;
  join.set_job_id("streamed");
  join.set_member_id("reader");
  join.mutable_spec()->set_dataset_size(1000000);
  join.mutable_spec()->set_world_size(1);
  join.set_wait_for_world_ms(10000);
  const shard::v1::JoinJobResponse joined =
      *first->JoinJob(join, absl::InfiniteFuture());
  grpc::ClientContext stream_context;
  shard::v1::StreamShardRequest open;
  open.set_job_id("streamed");
  open.set_generation(joined.generation());
  open.set_max_chunk_indices(64);  // 15,625 chunks in all.
  auto stream = stub->StreamShard(&stream_context, open);
  shard::v1::IndexChunk chunk;
  ASSERT_TRUE(stream->Read(&chunk));
  // A join that waits for a second member, sent over the wire.
  join.set_job_id("waiting");
  join.mutable_spec()->set_world_size(2);
  grpc::ClientContext join_context;
  shard::v1::JoinJobResponse never;
  grpc::Status waited;
  std::thread waiter(
      [&] { waited = stub->JoinJob(&join_context, join, &never); });
  while (first->Figures().waiting(server::WaitingCalls::Kind::kJoin) == 0) {
    absl::SleepFor(absl::Milliseconds(5));
  }

  EXPECT_EQ(server->Vacate(), first);
  waiter.join();
  EXPECT_EQ(waited.error_code(), grpc::UNAVAILABLE) << waited.error_message();
  int chunks = 1;
  while (stream->Read(&chunk)) ++chunks;
  const grpc::Status ended = stream->Finish();
  EXPECT_EQ(ended.error_code(), grpc::UNAVAILABLE) << ended.error_message();
  EXPECT_LT(chunks, 15625);
  EXPECT_EQ(*CheckHealth(channel, ""), Health::kNotServing);
  EXPECT_EQ(list_jobs(), -grpc::UNAVAILABLE);
  while (first.use_count() > 1) absl::SleepFor(absl::Milliseconds(5));

  server->Serve(std::make_shared<BlockingCoordinator>());
  EXPECT_EQ(list_jobs(), 0);  // The next one's state, on the same port.
  server->Stop(absl::Seconds(1));
}

TEST(ServerOperationsTest, ReflectionListsTheServices) {
  TestCluster cluster;
  absl::StatusOr<std::string> listed = ListServicesRaw(grpc::CreateChannel(
      cluster.address(), grpc::InsecureChannelCredentials()));
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_NE(listed->find("shard.v1.Coordinator"), std::string::npos);
  EXPECT_NE(listed->find("grpc.health.v1.Health"), std::string::npos);
}

TEST(ServerOperationsTest, OversizedRequestsAreRefused) {
  server::CoordinatorServerOptions options;
  options.max_request_bytes = 64 << 10;
  TestCluster cluster({}, options);
  auto stub = cluster.NewStub();
  grpc::ClientContext context;
  shard::v1::StoreSetRequest request;
  request.set_key("k");
  request.set_value(std::string(100 << 10, 'x'));
  shard::v1::StoreSetResponse response;
  EXPECT_EQ(stub->StoreSet(&context, request, &response).error_code(),
            grpc::RESOURCE_EXHAUSTED);
}

TEST(ServerOperationsTest, DeleteJobNeedsForceWhileMembersAreJoined) {
  TestCluster cluster;
  auto client = cluster.NewClient();
  shard::v1::JobSpec spec;
  spec.set_dataset_size(10);
  spec.set_world_size(2);
  ASSERT_TRUE(client->CreateJob("doomed", spec).ok());
  // One of two members joins (the world does not form).
  client->Join("doomed", "m0", std::nullopt, absl::ZeroDuration())
      .status()
      .IgnoreError();
  ASSERT_EQ(client->GetJob("doomed")->joined_members(), 1u);
  EXPECT_TRUE(absl::IsFailedPrecondition(client->DeleteJob("doomed", false)));
  EXPECT_TRUE(client->DeleteJob("doomed", true).ok());
  EXPECT_TRUE(absl::IsNotFound(client->GetJob("doomed").status()));
  EXPECT_TRUE(absl::IsNotFound(client->DeleteJob("doomed", true)));
  // The id can be used again, from a clean slate.
  ASSERT_TRUE(client->CreateJob("doomed", spec).ok());
  absl::StatusOr<shard::v1::Job> job = client->GetJob("doomed");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->joined_members(), 0u);
  EXPECT_EQ(job->generation(), 0u);
}

}  // namespace
}  // namespace shard::testing
