#include "common/plan/shuffles/order_allocator.h"

#include <sys/mman.h>

#include <cstdint>

namespace shard::plan::internal {
namespace {

size_t RoundUp(size_t bytes) {
  return (bytes + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
}

}  // namespace

void* MapHugePages(size_t bytes) {
  const size_t length = RoundUp(bytes);
  // Over-map by one huge page, then give back the unaligned head and the
  // tail, so the block starts on a 2 MiB boundary.
  void* mapped = mmap(nullptr, length + kHugePageBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(mapped);
  const uintptr_t aligned = RoundUp(start);
  const size_t head = aligned - start;
  if (head > 0) munmap(mapped, head);
  const size_t tail = kHugePageBytes - head;
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + length), tail);
  void* block = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
  madvise(block, length, MADV_HUGEPAGE);  // Advice: failure is harmless.
#endif
  return block;
}

void UnmapHugePages(void* block, size_t bytes) {
  munmap(block, RoundUp(bytes));
}

}  // namespace shard::plan::internal
