#include "trainer/heap_reuse.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace shard::trainer {
namespace {

// glibc refuses an mmap threshold above half its per-thread heap (64 MiB).
constexpr int kMmapThresholdBytes = 32 << 20;
// Free memory at the top of the heap kept rather than returned to the OS.
constexpr int kTrimThresholdBytes = 512 << 20;

bool EnvironmentTunesMalloc() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr ||
         std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr ||
         (tunables != nullptr &&
          std::strstr(tunables, "glibc.malloc.") != nullptr);
}

}  // namespace

std::string KeepFreedTensorMemory() {
#if defined(__GLIBC__)
  if (EnvironmentTunesMalloc()) {
    return "heap: malloc settings from the environment";
  }
  if (mallopt(M_MMAP_THRESHOLD, kMmapThresholdBytes) != 1 ||
      mallopt(M_TRIM_THRESHOLD, kTrimThresholdBytes) != 1) {
    return "heap: glibc refused the thresholds; freed blocks above 128 KiB "
           "go back to the OS";
  }
  return "heap: blocks up to 32 MiB are reused after free (mmap threshold "
         "32 MiB, trim threshold 512 MiB)";
#else
  return "heap: not glibc, allocator left as is";
#endif
}

}  // namespace shard::trainer
