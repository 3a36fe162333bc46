#include "proto/index_chunk_codec.h"

#include <cstring>
#include <string>

namespace shard::wire {

uint32_t IndexWidthFor(uint64_t index_bound) {
  return index_bound <= (uint64_t{1} << 32) ? 4 : 8;
}

char* ResizePackedIndices(size_t count, uint32_t width,
                          shard::v1::IndexChunk* chunk) {
  chunk->clear_indices();
  chunk->set_index_width(width);
  std::string* bytes = chunk->mutable_packed_indices();
  bytes->resize(count * width);
  return bytes->data();
}

void WriteIndices(absl::Span<const uint64_t> indices, uint32_t width,
                  char* out) {
  if (width == 8) {
    std::memcpy(out, indices.data(), indices.size() * 8);  // Little-endian.
    return;
  }
  for (size_t i = 0; i < indices.size(); ++i) {
    const uint32_t narrow = static_cast<uint32_t>(indices[i]);
    std::memcpy(out + i * 4, &narrow, 4);
  }
}

size_t ChunkIndexCount(const shard::v1::IndexChunk& chunk) {
  if (chunk.index_width() == 0)
    return static_cast<size_t>(chunk.indices_size());
  return chunk.packed_indices().size() / chunk.index_width();
}

size_t ChunkPayloadBytes(const shard::v1::IndexChunk& chunk) {
  if (chunk.index_width() == 0) return chunk.indices_size() * sizeof(uint64_t);
  return chunk.packed_indices().size();
}

void CopyChunkIndices(const shard::v1::IndexChunk& chunk, size_t from,
                      absl::Span<uint64_t> out) {
  if (chunk.index_width() == 0) {
    std::memcpy(out.data(), chunk.indices().data() + from,
                out.size() * sizeof(uint64_t));
    return;
  }
  const char* in = chunk.packed_indices().data() + from * chunk.index_width();
  if (chunk.index_width() == 8) {
    std::memcpy(out.data(), in, out.size() * 8);
    return;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    uint32_t narrow;
    std::memcpy(&narrow, in + i * 4, 4);
    out[i] = narrow;
  }
}

bool ChunkWellFormed(const shard::v1::IndexChunk& chunk) {
  const uint32_t width = chunk.index_width();
  if (width == 0) return chunk.packed_indices().empty();
  return (width == 4 || width == 8) &&
         chunk.packed_indices().size() % width == 0 &&
         chunk.indices_size() == 0;
}

}  // namespace shard::wire
