// In-process test cluster: a real shardd gRPC server on 127.0.0.1:0 plus
// clients connected to it. Destruction drains and stops the server.
#ifndef TESTS_SUPPORT_TEST_CLUSTER_H_
#define TESTS_SUPPORT_TEST_CLUSTER_H_

#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "server/rpc/coordinator_server.h"
#include "shard/client/coordinator_client.h"
#include "tests/support/blocking_coordinator.h"

namespace shard::testing {

class TestCluster {
 public:
  // Serves on a free loopback port; `server_options.listen` is ignored.
  explicit TestCluster(server::CoordinatorOptions options = {},
                       server::CoordinatorServerOptions server_options = {});
  ~TestCluster();

  const std::string& address() const { return address_; }
  BlockingCoordinator& service() { return *service_; }
  server::CoordinatorServer& server() { return *server_; }
  // A raw stub, for requests the client library would never send.
  std::unique_ptr<shard::v1::Coordinator::Stub> NewStub() const;
  // A client with short retry deadlines.
  std::shared_ptr<client::CoordinatorClient> NewClient() const;

 private:
  std::shared_ptr<BlockingCoordinator> service_;
  std::unique_ptr<server::CoordinatorServer> server_;
  std::string address_;
};

}  // namespace shard::testing

#endif  // TESTS_SUPPORT_TEST_CLUSTER_H_
