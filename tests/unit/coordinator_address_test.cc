// Coordinator addresses: HOST:PORT, [IPV6]:PORT and gRPC target URIs are
// accepted; an address without a port (which gRPC would dial on 443) is
// INVALID_ARGUMENT naming it and the fix.
#include <string>

#include "gtest/gtest.h"
#include "shard/client/coordinator_client.h"

namespace shard::client {
namespace {

absl::Status ConnectTo(const std::string& address) {
  ClientOptions options;
  options.address = address;
  return CoordinatorClient::Connect(options).status();
}

TEST(CoordinatorAddressTest, HostPortFormsAndTargetUrisAreAccepted) {
  for (const char* address :
       {"shardd:7070", "127.0.0.1:7070", "[::1]:7070", "dns:///shardd:7070",
        "unix:/run/shardd.sock", "a:1, b:2,c:3"}) {
    EXPECT_TRUE(ConnectTo(address).ok()) << address;
  }
}

TEST(CoordinatorAddressTest, AnAddressWithoutAPortIsRefused) {
  for (const char* address :
       {"shardd", "::1", "[::1]", "shardd:http", "shardd:123456", "a:1,b"}) {
    const absl::Status status = ConnectTo(address);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << address;
    EXPECT_NE(status.message().find("has no port: give HOST:PORT"),
              std::string::npos)
        << status;
  }
  EXPECT_NE(ConnectTo("a:1,b").message().find("\"b\""), std::string::npos);
}

}  // namespace
}  // namespace shard::client
