// How a chunk of indices should travel: measures, per index, the whole
// per-chunk work of both ends for each candidate encoding of IndexChunk:
//   varint  - `repeated uint64 indices` (packed varints);
//   fixed32 - `bytes packed_indices`, 4-byte little-endian;
//   fixed64 - `bytes packed_indices`, 8-byte little-endian.
// Server side: gather the rank's strided indices from a shuffled uint32
// order into the message and serialize it. Client side: parse it and copy
// the indices into a uint64 span. Also reports wire bytes per index.
// Run: build/bin/shard-chunk-encoding-bench
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "proto/index_chunk_codec.h"
#include "shard/v1/shard.pb.h"

namespace {

constexpr uint32_t kWorld = 8;
constexpr uint64_t kOrderSize = uint64_t{1} << 24;

const std::vector<uint32_t>& Order() {
  static const std::vector<uint32_t>* order = [] {
    auto* v = new std::vector<uint32_t>(kOrderSize);
    std::iota(v->begin(), v->end(), 0u);
    std::shuffle(v->begin(), v->end(), std::mt19937(7));
    // Pretend N ~ 1e8: indices need ~27 bits, like a real large job.
    for (uint32_t& x : *v) x = x * 6 + 5;
    return v;
  }();
  return *order;
}

enum Encoding { kVarint = 0, kFixed32 = 1, kFixed64 = 2 };

// The server side: gathers the rank's strided indices, as ShardCursor does
// (fixed widths through the same codec calls, in 1024-index pieces).
void Encode(Encoding encoding, uint64_t first, int count,
            shard::v1::IndexChunk* chunk) {
  const std::vector<uint32_t>& order = Order();
  chunk->Clear();
  chunk->set_rank_offset(first);
  chunk->set_rank_shard_size(kOrderSize / kWorld);
  if (encoding == kVarint) {
    chunk->mutable_indices()->Resize(count, 0);
    uint64_t* out = chunk->mutable_indices()->mutable_data();
    for (int i = 0; i < count; ++i) out[i] = order[(first + i) * kWorld];
    return;
  }
  const uint32_t width = encoding == kFixed32 ? 4 : 8;
  char* packed = shard::wire::ResizePackedIndices(count, width, chunk);
  uint64_t piece[1024];
  for (int done = 0; done < count;) {
    const int n = std::min<int>(std::size(piece), count - done);
    for (int i = 0; i < n; ++i) piece[i] = order[(first + done + i) * kWorld];
    shard::wire::WriteIndices(absl::MakeConstSpan(piece, n), width,
                              packed + static_cast<size_t>(done) * width);
    done += n;
  }
}

void BM_Chunk(benchmark::State& state) {
  const auto encoding = static_cast<Encoding>(state.range(0));
  const int count = static_cast<int>(state.range(1));
  shard::v1::IndexChunk sent, received;
  std::string wire;
  std::vector<uint64_t> out(count);
  uint64_t first = 0, bytes = 0;
  for (auto _ : state) {
    Encode(encoding, first, count, &sent);
    sent.SerializeToString(&wire);
    received.ParseFromString(wire);
    shard::wire::CopyChunkIndices(received, 0, absl::MakeSpan(out));
    benchmark::DoNotOptimize(out.data());
    bytes += wire.size();
    first = (first + count) % (kOrderSize / kWorld - count);
  }
  state.SetItemsProcessed(state.iterations() * count);
  state.counters["wire_bytes_per_index"] =
      static_cast<double>(bytes) / (state.iterations() * count);
  state.SetLabel(encoding == kVarint    ? "varint"
                 : encoding == kFixed32 ? "fixed32"
                                        : "fixed64");
}
BENCHMARK(BM_Chunk)->ArgsProduct({{kVarint, kFixed32, kFixed64},
                                  {1024, 16384, 65536}});

// The physical limit for comparison: copying the same 4-byte-per-index
// payload once.
void BM_Memcpy(benchmark::State& state) {
  const size_t count = static_cast<size_t>(state.range(0));
  std::vector<uint32_t> src(Order().begin(), Order().begin() + count);
  std::vector<uint32_t> dst(count);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), count * 4);
    benchmark::DoNotOptimize(dst.data());
  }
  state.SetItemsProcessed(state.iterations() * count);
}
BENCHMARK(BM_Memcpy)->Arg(16384);

}  // namespace

BENCHMARK_MAIN();
