#include "proto/index_chunk_codec.h"

#include <vector>

#include "gtest/gtest.h"

namespace shard::wire {
namespace {

TEST(IndexChunkCodecTest, WidthFollowsTheDatasetSize) {
  EXPECT_EQ(IndexWidthFor(1), 4u);
  EXPECT_EQ(IndexWidthFor(uint64_t{1} << 32), 4u);  // Largest index 2^32-1.
  EXPECT_EQ(IndexWidthFor((uint64_t{1} << 32) + 1), 8u);
}

TEST(IndexChunkCodecTest, BothWidthsRoundTripAnySlice) {
  const std::vector<uint64_t> narrow = {0, 7, 4294967295u, 12345, 1};
  const std::vector<uint64_t> wide = {uint64_t{1} << 40, 3, ~uint64_t{0} >> 1};
  for (const auto& [indices, width] :
       {std::pair{narrow, 4u}, std::pair{wide, 8u}}) {
    shard::v1::IndexChunk chunk;
    chunk.add_indices(99);  // Replaced, not appended to.
    WriteIndices(indices, width,
                 ResizePackedIndices(indices.size(), width, &chunk));
    ASSERT_TRUE(ChunkWellFormed(chunk));
    ASSERT_EQ(ChunkIndexCount(chunk), indices.size());
    EXPECT_EQ(ChunkPayloadBytes(chunk), indices.size() * width);
    std::vector<uint64_t> got(indices.size() - 1);
    CopyChunkIndices(chunk, 1, absl::MakeSpan(got));
    EXPECT_EQ(got, std::vector<uint64_t>(indices.begin() + 1, indices.end()));
  }
}

TEST(IndexChunkCodecTest, VarintChunksAreStillRead) {
  shard::v1::IndexChunk chunk;
  for (uint64_t i : {5, 6, 7}) chunk.add_indices(i);
  ASSERT_TRUE(ChunkWellFormed(chunk));
  std::vector<uint64_t> got(2);
  CopyChunkIndices(chunk, 1, absl::MakeSpan(got));
  EXPECT_EQ(got, (std::vector<uint64_t>{6, 7}));
}

TEST(IndexChunkCodecTest, MalformedChunksAreDetected) {
  shard::v1::IndexChunk chunk;
  chunk.set_index_width(3);
  chunk.set_packed_indices("abcdef");
  EXPECT_FALSE(ChunkWellFormed(chunk));
  chunk.set_index_width(4);
  chunk.set_packed_indices("abcde");
  EXPECT_FALSE(ChunkWellFormed(chunk));
  chunk.set_index_width(0);
  EXPECT_FALSE(ChunkWellFormed(chunk));  // Bytes without a width.
}

}  // namespace
}  // namespace shard::wire
