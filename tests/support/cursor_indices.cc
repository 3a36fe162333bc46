#include "tests/support/cursor_indices.h"

#include "absl/types/span.h"
#include "proto/index_chunk_codec.h"

namespace shard::testing {

std::vector<uint64_t> CursorIndices(server::ShardCursor& cursor) {
  std::vector<uint64_t> all;
  shard::v1::IndexChunk chunk;
  while (cursor.Next(&chunk)) {
    std::vector<uint64_t> got(wire::ChunkIndexCount(chunk));
    wire::CopyChunkIndices(chunk, 0, absl::MakeSpan(got));
    all.insert(all.end(), got.begin(), got.end());
  }
  return all;
}

}  // namespace shard::testing
