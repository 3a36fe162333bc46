// The two encodings of IndexChunk's indices: varints (`indices`) and
// fixed-width little-endian integers (`packed_indices`, `index_width` 4 or
// 8). shardd sends the fixed form: tests/bench/chunk_encoding_bench
// measured it 3.4x cheaper than varints end to end at the same bytes per
// index. Readers accept both. Stateless; thread-safe.
#ifndef PROTO_INDEX_CHUNK_CODEC_H_
#define PROTO_INDEX_CHUNK_CODEC_H_

#include <cstddef>
#include <cstdint>

#include "absl/types/span.h"
#include "shard/v1/shard.pb.h"

namespace shard::wire {

// Bytes per index for a stream whose indices are all below `index_bound`
// (a job's dataset size; for a mixture, all its sources' samples, however
// few an epoch takes): 4 when every index fits 32 bits, else 8.
uint32_t IndexWidthFor(uint64_t index_bound);

// Makes the chunk carry `count` packed indices of `width` (4 or 8) bytes:
// clears the varint field, sets index_width and sizes packed_indices
// (reusing its buffer). Returns where to write them (with WriteIndices).
char* ResizePackedIndices(size_t count, uint32_t width,
                          shard::v1::IndexChunk* chunk);

// Writes `indices` as `width`-byte little-endian integers to `out`
// (indices.size() * width bytes; every index must fit). A producer may
// fill a chunk in pieces.
void WriteIndices(absl::Span<const uint64_t> indices, uint32_t width,
                  char* out);

// Number of indices the chunk carries, in either encoding.
size_t ChunkIndexCount(const shard::v1::IndexChunk& chunk);

// Bytes the chunk's indices occupy in memory (its payload).
size_t ChunkPayloadBytes(const shard::v1::IndexChunk& chunk);

// Copies indices [from, from + out.size()) of the chunk into `out`.
// Requires from + out.size() <= ChunkIndexCount(chunk).
void CopyChunkIndices(const shard::v1::IndexChunk& chunk, size_t from,
                      absl::Span<uint64_t> out);

// INVALID_ARGUMENT-style check for data from the wire: false when
// index_width is not 0, 4 or 8 or packed_indices is not a multiple of it.
bool ChunkWellFormed(const shard::v1::IndexChunk& chunk);

}  // namespace shard::wire

#endif  // PROTO_INDEX_CHUNK_CODEC_H_
