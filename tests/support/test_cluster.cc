#include "tests/support/test_cluster.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace shard::testing {

TestCluster::TestCluster(server::CoordinatorOptions options)
    : service_(options), grpc_service_(&service_) {
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&grpc_service_);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || port == 0) std::abort();
  address_ = absl::StrCat("127.0.0.1:", port);
}

TestCluster::~TestCluster() {
  service_.Drain();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
}

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
