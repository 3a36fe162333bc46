#include "tests/support/test_cluster.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"

namespace shard::testing {

TestCluster::TestCluster(server::CoordinatorOptions options,
                         server::CoordinatorServerOptions server_options)
    : service_(std::make_shared<BlockingCoordinator>(options)) {
  server_options.listen = "127.0.0.1:0";
  auto server = server::CoordinatorServer::Start(service_, server_options);
  if (!server.ok()) {
    std::fprintf(stderr, "TestCluster: %s\n",
                 server.status().ToString().c_str());
    std::abort();
  }
  server_ = *std::move(server);
  address_ = server_->address();
}

TestCluster::~TestCluster() { server_->Stop(absl::Seconds(5)); }

std::unique_ptr<shard::v1::Coordinator::Stub> TestCluster::NewStub() const {
  return shard::v1::Coordinator::NewStub(
      grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
}

std::shared_ptr<client::CoordinatorClient> TestCluster::NewClient() const {
  client::ClientOptions options;
  options.address = address_;
  options.rpc_timeout = absl::Seconds(20);
  options.retry.deadline = absl::Seconds(2);
  return *client::CoordinatorClient::Connect(options);
}

}  // namespace shard::testing
