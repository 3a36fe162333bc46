// The coordinator state's snapshots in etcd, and how they are laid out.
//
// A snapshot (the state after record S) is one framed StateSnapshot record
// (storage::EncodeRecord: length and CRC-32, so a missing or damaged piece
// is detected) split into chunks under <prefix>snap/<S, 20 digits>/<index,
// 6 digits>, each small enough for one etcd request (etcd refuses requests
// over --max-request-bytes, 1.5 MiB by default). The manifest key
// <prefix>snapshot names the snapshot in force (EtcdSnapshotManifest); it
// is written last, so chunks of a snapshot whose writer died half-way are
// never read, and the Txn that writes it also deletes the records and the
// chunks it supersedes (see EtcdStateStore).
//
// Pure functions: no I/O, thread-compatible.
#ifndef SERVER_REPLICATION_ETCD_SNAPSHOT_H_
#define SERVER_REPLICATION_ETCD_SNAPSHOT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/state/coordinator_state.h"

namespace shard::server::replication {

inline constexpr absl::string_view kSnapshotManifestKey = "snapshot";
inline constexpr absl::string_view kSnapshotChunkPrefix = "snap/";
// Well under etcd's default request limit of 1.5 MiB.
inline constexpr size_t kDefaultSnapshotChunkBytes = 512 << 10;

using EtcdEntries = std::vector<std::pair<std::string, std::string>>;

struct EncodedSnapshot {
  uint64_t sequence = 0;
  // (key relative to the prefix, value) of each chunk, in order.
  EtcdEntries chunks;
  // The value of kSnapshotManifestKey that puts this snapshot in force.
  std::string manifest;
  // The framed snapshot's size.
  uint64_t bytes = 0;
};

// The chunks and manifest of `state`, the state after record `sequence`.
EncodedSnapshot EncodeSnapshot(const CoordinatorState& state, uint64_t sequence,
                               size_t chunk_bytes);

// The key prefix of snapshot `sequence`'s chunks: "snap/<sequence>/".
std::string SnapshotChunksPrefix(uint64_t sequence);

struct DecodedSnapshot {
  uint64_t sequence = 0;
  CoordinatorState state;
  // The framed snapshot's size (its chunks together).
  uint64_t bytes = 0;
};
// The state the manifest `manifest` names, from `entries`: every key under
// kSnapshotChunkPrefix read at one revision (chunks of other snapshots are
// ignored). DATA_LOSS saying what is wrong: a manifest that does not parse,
// a missing or damaged chunk, a state that is not consistent.
absl::StatusOr<DecodedSnapshot> DecodeSnapshot(const std::string& manifest,
                                               const EtcdEntries& entries);

}  // namespace shard::server::replication

#endif  // SERVER_REPLICATION_ETCD_SNAPSHOT_H_
