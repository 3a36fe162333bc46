// In-process test cluster: a real shardd gRPC server on 127.0.0.1:0 plus
// clients connected to it. Destruction drains and stops the server.
#ifndef TESTS_SUPPORT_TEST_CLUSTER_H_
#define TESTS_SUPPORT_TEST_CLUSTER_H_

#include <memory>
#include <string>

#include "client/coordinator_client.h"
#include "grpcpp/grpcpp.h"
#include "server/coordinator_service.h"
#include "server/grpc_coordinator.h"

namespace shard::testing {

class TestCluster {
 public:
  explicit TestCluster(server::CoordinatorOptions options = {});
  ~TestCluster();

  const std::string& address() const { return address_; }
  server::CoordinatorService& service() { return service_; }
  // A raw stub, for requests the client library would never send.
  std::unique_ptr<shard::v1::Coordinator::Stub> NewStub() const;
  // A client with short retry deadlines.
  std::shared_ptr<client::CoordinatorClient> NewClient() const;

 private:
  server::CoordinatorService service_;
  server::GrpcCoordinator grpc_service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_TEST_CLUSTER_H_
