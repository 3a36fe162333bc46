#include "server/replication/etcd_snapshot.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/storage/record_codec.h"
#include "shard/state/v1/updates.pb.h"

namespace shard::server::replication {
namespace {

std::string ChunkKey(uint64_t sequence, size_t index) {
  return absl::StrFormat("%s%06d", SnapshotChunksPrefix(sequence), index);
}

}  // namespace

std::string SnapshotChunksPrefix(uint64_t sequence) {
  return absl::StrFormat("%s%020d/", kSnapshotChunkPrefix, sequence);
}

EncodedSnapshot EncodeSnapshot(const CoordinatorState& state, uint64_t sequence,
                               size_t chunk_bytes) {
  const std::string framed =
      storage::EncodeRecord(state.ToSnapshot(sequence).SerializeAsString());
  EncodedSnapshot encoded;
  encoded.sequence = sequence;
  encoded.bytes = framed.size();
  chunk_bytes = std::max<size_t>(chunk_bytes, 1);
  for (size_t offset = 0; offset < framed.size(); offset += chunk_bytes) {
    encoded.chunks.emplace_back(ChunkKey(sequence, encoded.chunks.size()),
                                framed.substr(offset, chunk_bytes));
  }
  shard::state::v1::EtcdSnapshotManifest manifest;
  manifest.set_sequence(sequence);
  manifest.set_chunks(encoded.chunks.size());
  manifest.set_bytes(encoded.bytes);
  encoded.manifest = manifest.SerializeAsString();
  return encoded;
}

absl::StatusOr<DecodedSnapshot> DecodeSnapshot(const std::string& manifest,
                                               const EtcdEntries& entries) {
  shard::state::v1::EtcdSnapshotManifest named;
  if (!named.ParseFromString(manifest) || named.chunks() == 0) {
    return absl::DataLossError(absl::StrCat("etcd key ", kSnapshotManifestKey,
                                            " is not a snapshot manifest"));
  }
  auto corrupt = [&named](absl::string_view why) {
    return absl::DataLossError(absl::StrCat("etcd snapshot at record ",
                                            named.sequence(), " is corrupt (",
                                            why, ")"));
  };
  const std::string prefix = SnapshotChunksPrefix(named.sequence());
  std::string framed;
  size_t found = 0;
  for (const auto& [key, value] : entries) {
    if (!absl::StartsWith(key, prefix)) continue;
    if (found >= named.chunks() || key != ChunkKey(named.sequence(), found)) {
      return corrupt(absl::StrCat("unexpected chunk ", key));
    }
    framed += value;
    ++found;
  }
  if (found != named.chunks()) {
    return corrupt(
        absl::StrCat(found, " of its ", named.chunks(), " chunks are there"));
  }
  if (framed.size() != named.bytes()) {
    return corrupt(
        absl::StrCat(framed.size(), " bytes instead of ", named.bytes()));
  }
  absl::StatusOr<storage::DecodedRecords> decoded =
      storage::DecodeRecords(framed);
  if (!decoded.ok()) return corrupt(decoded.status().message());
  shard::state::v1::StateSnapshot snapshot;
  if (decoded->torn_tail || decoded->payloads.size() != 1 ||
      !snapshot.ParseFromString(decoded->payloads[0]) ||
      snapshot.sequence() != named.sequence()) {
    return corrupt("not one whole StateSnapshot record");
  }
  absl::StatusOr<CoordinatorState> state =
      CoordinatorState::FromSnapshot(snapshot);
  if (!state.ok()) return corrupt(state.status().message());
  return DecodedSnapshot{named.sequence(), *std::move(state), named.bytes()};
}

}  // namespace shard::server::replication
