// CostBlobs in etcd, for replicated coordinators: the costs named S are
// the values of <prefix>costs/S/000000, 000001, ... (1 MiB each at most,
// under etcd's default --max-request-bytes of 1.5 MiB), written one
// fenced Txn each, then <prefix>cost-sets/S (the piece count and bytes)
// last, which makes them visible: a writer that dies half-way leaves
// pieces nobody reads, written again (same bytes) by the next upload.
// Every write and removal is fenced by the leadership of the term that
// makes it (EtcdSession::FencedPut): a deposed leader changes nothing.
//
// Costs take 4 bytes a sample in etcd (10^8 samples: 400 MB): size etcd's
// --quota-backend-bytes for them (docs/operations.md).
//
// Thread-safe as the session is.
#ifndef SERVER_REPLICATION_ETCD_COST_BLOBS_H_
#define SERVER_REPLICATION_ETCD_COST_BLOBS_H_

#include <string>
#include <vector>

#include "server/replication/etcd_session.h"
#include "server/storage/cost_blobs.h"

namespace shard::server::replication {

class EtcdCostBlobs : public storage::CostBlobs {
 public:
  static constexpr size_t kPieceBytes = 1 << 20;
  static constexpr absl::string_view kPiecePrefix = "costs/";
  static constexpr absl::string_view kSetPrefix = "cost-sets/";

  // `session` is not owned and must outlive this; writes are fenced by
  // `leadership`.
  EtcdCostBlobs(EtcdSession* session, EtcdSession::Leadership leadership)
      : session_(session), leadership_(std::move(leadership)) {}

  absl::Status Write(const std::string& sha256,
                     const std::string& le32) override;
  absl::StatusOr<std::string> Read(const std::string& sha256) override;
  absl::StatusOr<std::vector<std::string>> Names() override;
  absl::Status Remove(const std::string& sha256) override;
  std::string Where(const std::string& sha256) const override;

  // The bytes the costs under the session's prefix take in etcd, and how
  // many sets there are (--check-etcd).
  struct Footprint {
    uint64_t sets = 0;
    uint64_t bytes = 0;
  };
  static absl::StatusOr<Footprint> Measure(EtcdSession& session);

 private:
  EtcdSession* const session_;
  const EtcdSession::Leadership leadership_;
};

}  // namespace shard::server::replication

#endif  // SERVER_REPLICATION_ETCD_COST_BLOBS_H_
