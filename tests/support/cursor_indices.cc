#include "tests/support/cursor_indices.h"

#include <optional>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "proto/index_chunk_codec.h"

namespace shard::testing {

std::vector<uint64_t> CursorIndices(server::ShardCursor& cursor) {
  std::vector<uint64_t> all;
  shard::v1::IndexChunk chunk;
  while (true) {
    // An order still being shuffled: wait as the stream would (on a thread
    // here, which is fine for tests).
    if (std::optional<uint64_t> entry = cursor.Awaits()) {
      if (!cursor.order()
               .progress()
               ->AwaitFinal(*entry, absl::InfiniteFuture())
               .ok()) {
        break;
      }
      continue;
    }
    if (!cursor.Next(&chunk)) break;
    std::vector<uint64_t> got(wire::ChunkIndexCount(chunk));
    wire::CopyChunkIndices(chunk, 0, absl::MakeSpan(got));
    all.insert(all.end(), got.begin(), got.end());
  }
  return all;
}

}  // namespace shard::testing
