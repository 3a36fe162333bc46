// Shared by the etcd store's tests: a real etcd per test (started in
// SetUp, gone after the test) and sessions with it.
#ifndef TESTS_REPLICATION_ETCD_TEST_BASE_H_
#define TESTS_REPLICATION_ETCD_TEST_BASE_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "server/replication/etcd_session.h"
#include "tests/support/etcd_process.h"

namespace shard::server::replication {

class EtcdTestBase : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<testing::EtcdProcess>> etcd =
        testing::EtcdProcess::Start();
    ASSERT_TRUE(etcd.ok()) << etcd.status();
    etcd_ = *std::move(etcd);
  }

  // A session under the prefix "/cluster/" with `endpoints` (empty: the
  // test's etcd); null (and a test failure) if it cannot start.
  std::unique_ptr<EtcdSession> Session(
      absl::Duration lease_ttl = absl::Seconds(5),
      std::vector<std::string> endpoints = {}) {
    EtcdSession::Options options;
    options.endpoints = endpoints.empty()
                            ? std::vector<std::string>{etcd_->endpoint()}
                            : std::move(endpoints);
    options.prefix = "/cluster/";
    options.lease_ttl = lease_ttl;
    absl::StatusOr<std::unique_ptr<EtcdSession>> session =
        EtcdSession::Start(options);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? *std::move(session) : nullptr;
  }

  std::unique_ptr<testing::EtcdProcess> etcd_;
};

}  // namespace shard::server::replication

#endif  // TESTS_REPLICATION_ETCD_TEST_BASE_H_
