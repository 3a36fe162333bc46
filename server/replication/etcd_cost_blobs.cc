#include "server/replication/etcd_cost_blobs.h"

#include <cstdint>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace shard::server::replication {
namespace {

std::string PiecesPrefix(const std::string& sha256) {
  return absl::StrCat(EtcdCostBlobs::kPiecePrefix, sha256, "/");
}

std::string PieceKey(const std::string& sha256, uint64_t index) {
  return absl::StrFormat("%s%06d", PiecesPrefix(sha256), index);
}

std::string SetKey(const std::string& sha256) {
  return absl::StrCat(EtcdCostBlobs::kSetPrefix, sha256);
}

// A set key's value: "PIECES BYTES".
struct SetValue {
  uint64_t pieces = 0;
  uint64_t bytes = 0;
};

bool ParseSetValue(const std::string& value, SetValue* set) {
  std::vector<absl::string_view> parts = absl::StrSplit(value, ' ');
  return parts.size() == 2 && absl::SimpleAtoi(parts[0], &set->pieces) &&
         absl::SimpleAtoi(parts[1], &set->bytes);
}

}  // namespace

std::string EtcdCostBlobs::Where(const std::string& sha256) const {
  return absl::StrCat("the costs in etcd under ", PiecesPrefix(sha256));
}

absl::Status EtcdCostBlobs::Write(const std::string& sha256,
                                  const std::string& le32) {
  const uint64_t pieces = (le32.size() + kPieceBytes - 1) / kPieceBytes;
  for (uint64_t i = 0; i < pieces; ++i) {
    absl::StatusOr<int64_t> put = session_->FencedPut(
        leadership_,
        {{PieceKey(sha256, i), le32.substr(i * kPieceBytes, kPieceBytes)}});
    if (!put.ok()) return put.status();
  }
  return session_
      ->FencedPut(leadership_,
                  {{SetKey(sha256), absl::StrCat(pieces, " ", le32.size())}})
      .status();
}

absl::StatusOr<std::string> EtcdCostBlobs::Read(const std::string& sha256) {
  absl::StatusOr<std::string> value = session_->Get(SetKey(sha256));
  if (!value.ok()) return value.status();
  SetValue set;
  if (!ParseSetValue(*value, &set)) {
    return absl::DataLossError(absl::StrCat("etcd key ", SetKey(sha256),
                                            " holds ", *value,
                                            ", not a piece count and a size"));
  }
  std::string le32;
  le32.reserve(set.bytes);
  for (uint64_t i = 0; i < set.pieces; ++i) {
    // One piece a call: an answer stays far under gRPC's message limit.
    absl::StatusOr<std::string> piece = session_->Get(PieceKey(sha256, i));
    if (!piece.ok()) {
      // A piece its set key counts is missing: damaged. Anything else
      // (etcd unreachable) as it is.
      return absl::Status(
          absl::IsNotFound(piece.status()) ? absl::StatusCode::kDataLoss
                                           : piece.status().code(),
          absl::StrCat("cannot read etcd key ", PieceKey(sha256, i), ": ",
                       piece.status().message()));
    }
    le32 += *piece;
  }
  if (le32.size() != set.bytes) {
    return absl::DataLossError(absl::StrCat(
        "the costs in etcd under ", PiecesPrefix(sha256), " hold ", le32.size(),
        " bytes, ", SetKey(sha256), " says ", set.bytes));
  }
  return le32;
}

absl::StatusOr<std::vector<std::string>> EtcdCostBlobs::Names() {
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> sets =
      session_->List(std::string(kSetPrefix));
  if (!sets.ok()) return sets.status();
  std::vector<std::string> names;
  for (const auto& [key, value] : *sets) {
    names.push_back(key.substr(kSetPrefix.size()));
  }
  return names;
}

absl::Status EtcdCostBlobs::Remove(const std::string& sha256) {
  // The set key first (in the same Txn): nobody reads a set in part.
  return session_
      ->FencedPut(leadership_, {},
                  {{SetKey(sha256), SetKey(sha256) + '\0'},
                   {PiecesPrefix(sha256),
                    EtcdSession::KeyAfterPrefix(PiecesPrefix(sha256))}})
      .status();
}

absl::StatusOr<EtcdCostBlobs::Footprint> EtcdCostBlobs::Measure(
    EtcdSession& session) {
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> sets =
      session.List(std::string(kSetPrefix));
  if (!sets.ok()) return sets.status();
  Footprint footprint;
  for (const auto& [key, value] : *sets) {
    SetValue set;
    if (ParseSetValue(value, &set)) footprint.bytes += set.bytes;
    ++footprint.sets;
  }
  return footprint;
}

}  // namespace shard::server::replication
