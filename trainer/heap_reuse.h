// Keeps the memory of freed tensors in the process heap so that the next
// training step reuses it instead of faulting in fresh pages.
//
// glibc's malloc serves a block above its mmap threshold (128 KiB at start;
// raised only after such a block is freed, and not at all in a process
// that never freed one) with a fresh mmap and unmaps it on free. Every
// training step allocates and frees activations and gradients of that size
// (a batch of 64 Fashion-MNIST images after the CNN's first convolution:
// 3.2 MB), so each step faulted in and zeroed new pages: measured 29 % of
// shard-train's CPU time in the kernel at W = 2. Fixing the threshold at
// 32 MiB (glibc's largest) and raising the trim threshold keeps those
// blocks in the heap; the heap then stays at the step's peak.
//
// Not thread-safe: call once at start, before other threads allocate.
#ifndef TRAINER_HEAP_REUSE_H_
#define TRAINER_HEAP_REUSE_H_

#include <string>

namespace shard::trainer {

// Applies the thresholds unless the environment already sets malloc's
// (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, GLIBC_TUNABLES with
// glibc.malloc.*) or the C library is not glibc. Returns what was done, as
// one line for the log.
std::string KeepFreedTensorMemory();

}  // namespace shard::trainer

#endif  // TRAINER_HEAP_REUSE_H_
