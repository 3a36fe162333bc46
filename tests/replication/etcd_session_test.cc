// EtcdSession against a real etcd: one leader at a time, and a deposed
// leader's write is refused by etcd itself (the fence), however late it
// comes; a watch of the leader key; a member that stops answering is left
// while the lease lives; TLS with client certificates.
#include "server/replication/etcd_session.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tests/replication/etcd_test_base.h"
#include "tests/support/tcp_proxy.h"

namespace shard::server::replication {
namespace {

class EtcdSessionTest : public EtcdTestBase {};

TEST_F(EtcdSessionTest, OneLeaderAtATimeAndOthersAreToldWho) {
  std::unique_ptr<EtcdSession> a = Session();
  std::unique_ptr<EtcdSession> b = Session();
  ASSERT_TRUE(a && b);
  absl::StatusOr<EtcdSession::Leadership> led = a->Campaign("replica-a");
  ASSERT_TRUE(led.ok()) << led.status();
  absl::StatusOr<EtcdSession::Leadership> refused = b->Campaign("replica-b");
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("replica-a"), std::string::npos)
      << refused.status();
  EXPECT_EQ(*b->Leader(), "replica-a");
  EXPECT_TRUE(a->FencedPut(*led, {{"jobs/x", "1"}}).ok());
  EXPECT_EQ(*b->Get("jobs/x"), "1");
}

TEST_F(EtcdSessionTest, ADeposedLeadersWriteIsRefusedAndChangesNothing) {
  std::unique_ptr<EtcdSession> a = Session();
  std::unique_ptr<EtcdSession> b = Session();
  ASSERT_TRUE(a && b);
  absl::StatusOr<EtcdSession::Leadership> old_leader = a->Campaign("replica-a");
  ASSERT_TRUE(old_leader.ok()) << old_leader.status();
  ASSERT_TRUE(a->FencedPut(*old_leader, {{"jobs/x", "from-a"}}).ok());
  // A's lease ends (as when it lapses while A is paused): B takes over.
  ASSERT_TRUE(a->Revoke().ok());
  absl::StatusOr<EtcdSession::Leadership> new_leader = b->Campaign("replica-b");
  ASSERT_TRUE(new_leader.ok()) << new_leader.status();
  EXPECT_NE(new_leader->revision, old_leader->revision);
  ASSERT_TRUE(b->FencedPut(*new_leader, {{"jobs/x", "from-b"}}).ok());
  // A, unaware, writes with its old leadership: etcd refuses the Txn.
  absl::Status late =
      a->FencedPut(*old_leader, {{"jobs/x", "late-a"}, {"jobs/y", "late-a"}})
          .status();
  EXPECT_EQ(late.code(), absl::StatusCode::kFailedPrecondition) << late;
  EXPECT_EQ(*b->Get("jobs/x"), "from-b");
  EXPECT_EQ(b->Get("jobs/y").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*b->Leader(), "replica-b");  // B still leads.
}

TEST_F(EtcdSessionTest, AWatchOfTheLeaderKeySeesItGoAndTheNextLeaderCome) {
  std::unique_ptr<EtcdSession> a = Session();
  std::unique_ptr<EtcdSession> b = Session();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->Campaign("replica-a").ok());
  absl::StatusOr<EtcdSession::LeaderKey> read = b->ReadLeader();
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->identity, "replica-a");
  absl::StatusOr<std::unique_ptr<EtcdSession::PrefixWatch>> watch =
      b->WatchKey("leader", read->revision + 1);
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE(a->Revoke().ok());  // As a leader does when it stops.
  absl::StatusOr<std::vector<EtcdSession::Change>> gone = (*watch)->Next();
  ASSERT_TRUE(gone.ok()) << gone.status();
  ASSERT_EQ(gone->size(), 1u);
  EXPECT_TRUE(gone->front().deleted);
  EXPECT_EQ(gone->front().key, "leader");
  EXPECT_GT(gone->front().revision, read->revision);
  ASSERT_TRUE(b->Campaign("replica-b").ok());
  absl::StatusOr<std::vector<EtcdSession::Change>> next = (*watch)->Next();
  ASSERT_TRUE(next.ok()) << next.status();
  ASSERT_EQ(next->size(), 1u);
  EXPECT_FALSE(next->front().deleted);
  EXPECT_EQ(next->front().value, "replica-b");
}

TEST_F(EtcdSessionTest, AMemberThatStopsAnsweringIsLeftWhileTheLeaseLives) {
  // Two ways to the one etcd: through a proxy that freezes (a hung member:
  // its connections stay open and nothing answers) and direct.
  absl::StatusOr<std::unique_ptr<testing::TcpProxy>> proxy =
      testing::TcpProxy::Start(etcd_->endpoint());
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  std::unique_ptr<EtcdSession> session =
      Session(absl::Seconds(2), {(*proxy)->endpoint(), etcd_->endpoint()});
  ASSERT_TRUE(session);
  absl::StatusOr<EtcdSession::Leadership> led = session->Campaign("replica-a");
  ASSERT_TRUE(led.ok()) << led.status();
  (*proxy)->Freeze();
  // A leader's renewals for three leases: each that waits on the frozen
  // member gives up soon enough for the next, on the other member, to find
  // the lease alive.
  const absl::Duration ttl = session->granted_ttl();
  for (const absl::Time end = absl::Now() + 3 * ttl; absl::Now() < end;) {
    const absl::Status kept = session->KeepAlive();
    ASSERT_FALSE(absl::IsNotFound(kept)) << kept;
    if (kept.ok()) absl::SleepFor(ttl / 3);
  }
  EXPECT_TRUE(session->FencedPut(*led, {{"jobs/x", "1"}}).ok());
  EXPECT_EQ(*session->Leader(), "replica-a");
  (*proxy)->Thaw();
}

TEST_F(EtcdSessionTest, ALeaseNotKeptAliveLapsesAndFreesTheLeadership) {
  std::unique_ptr<EtcdSession> a = Session(absl::Seconds(1));
  std::unique_ptr<EtcdSession> b = Session();
  ASSERT_TRUE(a && b);
  absl::StatusOr<EtcdSession::Leadership> led = a->Campaign("replica-a");
  ASSERT_TRUE(led.ok()) << led.status();
  EXPECT_TRUE(a->KeepAlive().ok());
  // No keep-alive: etcd expires the lease (its TTL is at least 1 s; etcd
  // may round it up), and with it the leader key.
  absl::StatusOr<EtcdSession::Leadership> taken;
  const absl::Time until = absl::Now() + absl::Seconds(30);
  do {
    absl::SleepFor(absl::Milliseconds(200));
    taken = b->Campaign("replica-b");
  } while (!taken.ok() && absl::Now() < until);
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_EQ(a->KeepAlive().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(a->FencedPut(*led, {{"jobs/x", "late"}}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// The serving gate comes from the TTL etcd granted: etcd raises a lease
// below its minimum (1.5 election timeouts, rounded up to whole seconds),
// and the session reports what it got, never less than it asked.
TEST_F(EtcdSessionTest, ASessionKnowsTheTtlEtcdGranted) {
  std::unique_ptr<EtcdSession> five = Session(absl::Seconds(5));
  ASSERT_TRUE(five);
  EXPECT_EQ(five->granted_ttl(), absl::Seconds(5));
  std::unique_ptr<EtcdSession> one = Session(absl::Seconds(1));
  ASSERT_TRUE(one);
  EXPECT_GE(one->granted_ttl(), absl::Seconds(1));
  EXPECT_EQ(one->granted_ttl(),
            absl::Trunc(one->granted_ttl(), absl::Seconds(1)));
}

// etcd counts leases in whole seconds: 2999ms would be granted as 2s (or
// raised), so a gate of 2.999 s would outlive the lease. Refused up front.
TEST(EtcdLeaseTtlTest, OnlyWholeSecondsOfAtLeastOneAreAccepted) {
  EXPECT_TRUE(CheckLeaseTtl(absl::Seconds(2)).ok());
  const absl::Status fractional = CheckLeaseTtl(absl::Milliseconds(2999));
  EXPECT_EQ(fractional.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(fractional.message().find("give 2s or 3s"), std::string::npos)
      << fractional;
  EXPECT_FALSE(CheckLeaseTtl(absl::Milliseconds(500)).ok());
  EXPECT_FALSE(CheckLeaseTtl(absl::ZeroDuration()).ok());
}

TEST_F(EtcdSessionTest, AnUnreachableEtcdIsUnavailableNamingIt) {
  EtcdSession::Options options;
  options.endpoints = {"127.0.0.1:1"};  // Nothing listens there.
  options.timeout = absl::Milliseconds(500);
  absl::StatusOr<std::unique_ptr<EtcdSession>> session =
      EtcdSession::Start(options);
  ASSERT_EQ(session.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(session.status().message().find("etcd at 127.0.0.1:1"),
            std::string::npos)
      << session.status();
}

// A TLS etcd that requires client certificates (--etcd-ca, --etcd-cert,
// --etcd-key): a session with the CA and this replica's certificate leads
// and writes; one without a certificate, or in plaintext, cannot start.
TEST(EtcdSessionTlsTest, ASessionWithTheCaAndACertificateUsesATlsEtcd) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    absl::StrCat("shard-etcd-tls-", getpid());
  const std::string make_certs = absl::StrCat(
      SHARD_SOURCE_DIR, "/tests/support/make_test_certs.sh ", dir.string());
  ASSERT_EQ(std::system(make_certs.c_str()), 0);
  auto path = [&dir](const char* name) { return (dir / name).string(); };
  const testing::EtcdProcess::Tls tls{path("ca.pem"), path("server.pem"),
                                      path("server.key"), path("client.pem"),
                                      path("client.key")};
  absl::StatusOr<std::unique_ptr<testing::EtcdProcess>> etcd =
      testing::EtcdProcess::Start(&tls);
  ASSERT_TRUE(etcd.ok()) << etcd.status();

  EtcdSession::Options options;
  options.endpoints = {(*etcd)->endpoint()};
  options.prefix = "/tls/";
  options.tls_ca_file = path("ca.pem");
  options.tls_cert_file = path("client.pem");
  options.tls_key_file = path("client.key");
  {
    absl::StatusOr<std::unique_ptr<EtcdSession>> session =
        EtcdSession::Start(options);
    ASSERT_TRUE(session.ok()) << session.status();
    absl::StatusOr<EtcdSession::Leadership> led =
        (*session)->Campaign("replica-a");
    ASSERT_TRUE(led.ok()) << led.status();
    EXPECT_TRUE((*session)->FencedPut(*led, {{"jobs/x", "1"}}).ok());
    EXPECT_EQ(*(*session)->Get("jobs/x"), "1");
  }
  options.timeout = absl::Seconds(2);
  options.tls_cert_file.clear();
  options.tls_key_file.clear();
  EXPECT_EQ(EtcdSession::Start(options).status().code(),
            absl::StatusCode::kUnavailable);
  options.tls_ca_file.clear();
  EXPECT_EQ(EtcdSession::Start(options).status().code(),
            absl::StatusCode::kUnavailable);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace shard::server::replication
