// Process-wide settings for a process that holds many calls at once: the
// coordinator (shardd) and the load benchmarks' clients. Call first thing
// in main(), before any thread starts; libraries never call it.
//
// What it changes, and why:
// - Abseil's debug lock graph off. Debian's Abseil is built with its
//   debug checks, so each Mutex lock and each Mutex destroyed updates one
//   process-wide graph of lock order under a global lock: 7 to 14 % of
//   the CPU of either side of a storm of 100,000 joins. Tests keep it.
// - Freed heap memory stays with the process up to 256 MiB an arena,
//   instead of going back to the kernel at 128 KiB: a storm's calls are
//   freed and allocated again by many threads, and every page given back
//   was zeroed by the kernel again when reused (a fifth of the
//   coordinator's CPU in the same storm). Resident memory then stays near
//   its peak rather than shrinking after a storm.
// - One malloc arena a core, instead of glibc's eight: the calls of a
//   storm are allocated and freed by many threads (shardd serves the
//   waiting calls on 16), and memory freed in one arena was not reused by
//   threads of another: 99,999 parked rendezvous waits added 262-509 MiB
//   to the coordinator's RSS with eight arenas a core, 1-208 MiB with one.
#ifndef COMMON_SYNC_BUSY_PROCESS_H_
#define COMMON_SYNC_BUSY_PROCESS_H_

namespace shard::sync {

void TuneForManyCalls();

}  // namespace shard::sync

#endif  // COMMON_SYNC_BUSY_PROCESS_H_
