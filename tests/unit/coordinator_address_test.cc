// Coordinator addresses: HOST:PORT, [IPV6]:PORT and gRPC target URIs are
// accepted; an address without a port (which gRPC would dial on 443) or
// with one outside 1..65535 is INVALID_ARGUMENT naming it and the fix.
#include <string>

#include "absl/strings/match.h"
#include "common/net/address.h"
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
       {"shardd", "[::1]", "shardd:http", "shardd:", "a:1,b"}) {
    const absl::Status status = ConnectTo(address);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << address;
    EXPECT_NE(status.message().find("has no port: give HOST:PORT"),
              std::string::npos)
        << status;
  }
  EXPECT_NE(ConnectTo("a:1,b").message().find("\"b\""), std::string::npos);
}

// Ports wrap nowhere: 0 and anything above 65535 are refused, naming the
// port and the range (gRPC would dial 95537 - 65536 = 30001).
TEST(CoordinatorAddressTest, PortsOutsideOneTo65535AreRefused) {
  for (const char* address : {"127.0.0.1:95537", "shardd:123456", "[::1]:65536",
                              "shardd:0", "shardd:99999999999"}) {
    const absl::Status status = ConnectTo(address);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << address;
    EXPECT_TRUE(absl::StrContains(status.message(), "out of range")) << status;
  }
  EXPECT_TRUE(
      absl::StrContains(ConnectTo("h:123456789012345678901").message(),
                        "has port 123456789012345678901, out of range"));
  EXPECT_TRUE(absl::StrContains(ConnectTo("127.0.0.1:95537").message(),
                                "\"127.0.0.1:95537\" has port 95537, out "
                                "of range: give a port from 1 to 65535"));
  EXPECT_TRUE(ConnectTo("127.0.0.1:65535").ok());
}

TEST(CoordinatorAddressTest, Ipv6GoesInBrackets) {
  const absl::Status status = ConnectTo("::1:7070");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(status.message(), "[::1]:7070")) << status;
}

// A listener may take port 0 (any free one); a client may not.
TEST(AddressRuleTest, PortZeroIsForListeners) {
  EXPECT_TRUE(net::CheckAddress("127.0.0.1:0", net::AddressUse::kListen).ok());
  EXPECT_FALSE(net::CheckAddress("127.0.0.1:0", net::AddressUse::kDial).ok());
  EXPECT_FALSE(
      net::CheckAddress("127.0.0.1:65536", net::AddressUse::kListen).ok());
  EXPECT_FALSE(
      net::CheckAddress("dns:///shardd:7070", net::AddressUse::kListen).ok());
}

}  // namespace
}  // namespace shard::client
