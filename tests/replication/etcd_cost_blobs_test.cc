// EtcdCostBlobs against a real etcd: costs of several pieces come back
// whole, a set written in part is not there, removal takes every piece, a
// deposed leader writes nothing, and a recovery reads no costs.
#include "server/replication/etcd_cost_blobs.h"

#include <string>

#include "server/replication/etcd_state_store.h"
#include "tests/replication/etcd_test_base.h"

namespace shard::server::replication {
namespace {

using EtcdCostBlobsTest = EtcdTestBase;

// `bytes` bytes, each piece's different from the others'.
std::string Costs(size_t bytes) {
  std::string le32(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) le32[i] = static_cast<char>(i * 7 % 251);
  return le32;
}

TEST_F(EtcdCostBlobsTest, CostsOfSeveralPiecesComeBackWhole) {
  std::unique_ptr<EtcdSession> session = Session();
  ASSERT_NE(session, nullptr);
  absl::StatusOr<EtcdSession::Leadership> led = session->Campaign("a");
  ASSERT_TRUE(led.ok()) << led.status();
  EtcdCostBlobs blobs(session.get(), *led);
  // Two whole pieces and a part of a third, and a set of one small piece.
  const std::string big = Costs(2 * EtcdCostBlobs::kPieceBytes + 12);
  const std::string small = Costs(8);
  const std::string big_name(64, 'b');
  const std::string small_name(64, 's');
  ASSERT_TRUE(blobs.Write(big_name, big).ok());
  ASSERT_TRUE(blobs.Write(small_name, small).ok());
  EXPECT_EQ(*blobs.Read(big_name), big);
  EXPECT_EQ(*blobs.Read(small_name), small);
  // Each side of a piece's size: exactly one piece, and a value over.
  for (const size_t bytes :
       {EtcdCostBlobs::kPieceBytes, EtcdCostBlobs::kPieceBytes + 4}) {
    const std::string name(64, bytes == EtcdCostBlobs::kPieceBytes ? 'e' : 'f');
    ASSERT_TRUE(blobs.Write(name, Costs(bytes)).ok());
    EXPECT_EQ(*blobs.Read(name), Costs(bytes)) << bytes;
    ASSERT_TRUE(blobs.Remove(name).ok());
  }
  EXPECT_EQ(*blobs.Names(), (std::vector<std::string>{big_name, small_name}));
  absl::StatusOr<EtcdCostBlobs::Footprint> footprint =
      EtcdCostBlobs::Measure(*session);
  ASSERT_TRUE(footprint.ok()) << footprint.status();
  EXPECT_EQ(footprint->sets, 2u);
  EXPECT_EQ(footprint->bytes, big.size() + small.size());
  // A recovery reads the records, not the costs (they are not records).
  absl::StatusOr<EtcdStateStore::Recovered> recovered =
      EtcdStateStore::Recover(*session);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_EQ(recovered->records, 0u);

  ASSERT_TRUE(blobs.Remove(big_name).ok());
  EXPECT_EQ(blobs.Read(big_name).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(*blobs.Names(), (std::vector<std::string>{small_name}));
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> left =
      session->List(std::string(EtcdCostBlobs::kPiecePrefix));
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(left->size(), 1u);               // The small set's one piece.
  EXPECT_TRUE(blobs.Remove(big_name).ok());  // Nothing there: OK.
}

TEST_F(EtcdCostBlobsTest, PiecesWithoutTheirSetKeyAreNotThere) {
  std::unique_ptr<EtcdSession> session = Session();
  ASSERT_NE(session, nullptr);
  absl::StatusOr<EtcdSession::Leadership> led = session->Campaign("a");
  ASSERT_TRUE(led.ok()) << led.status();
  const std::string name(64, 'c');
  // What a writer that died after its first piece leaves behind.
  ASSERT_TRUE(session
                  ->FencedPut(*led, {{std::string(EtcdCostBlobs::kPiecePrefix) +
                                          name + "/000000",
                                      Costs(16)}})
                  .ok());
  EtcdCostBlobs blobs(session.get(), *led);
  EXPECT_EQ(blobs.Read(name).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(blobs.Names()->empty());
  // The next upload writes the set whole.
  ASSERT_TRUE(blobs.Write(name, Costs(40)).ok());
  EXPECT_EQ(*blobs.Read(name), Costs(40));
}

TEST_F(EtcdCostBlobsTest, ADeposedLeaderWritesAndRemovesNothing) {
  std::unique_ptr<EtcdSession> a = Session();
  std::unique_ptr<EtcdSession> b = Session();
  ASSERT_TRUE(a && b);
  absl::StatusOr<EtcdSession::Leadership> old_leader = a->Campaign("a");
  ASSERT_TRUE(old_leader.ok()) << old_leader.status();
  const std::string kept(64, 'k');
  ASSERT_TRUE(EtcdCostBlobs(a.get(), *old_leader).Write(kept, Costs(8)).ok());
  ASSERT_TRUE(a->Revoke().ok());
  absl::StatusOr<EtcdSession::Leadership> new_leader = b->Campaign("b");
  ASSERT_TRUE(new_leader.ok()) << new_leader.status();
  EtcdCostBlobs late(a.get(), *old_leader);
  EXPECT_EQ(late.Write(std::string(64, 'n'), Costs(8)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(late.Remove(kept).code(), absl::StatusCode::kFailedPrecondition);
  EtcdCostBlobs current(b.get(), *new_leader);
  EXPECT_EQ(*current.Read(kept), Costs(8));
  EXPECT_EQ(*current.Names(), (std::vector<std::string>{kept}));
}

}  // namespace
}  // namespace shard::server::replication
