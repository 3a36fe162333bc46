// The allocator of stored epoch orders (hundreds of MiB for 10^8 samples).
//
// Two costs that the shuffle does not need are left out:
// - zeroing: resize() leaves new integer entries unwritten (the shuffle
//   writes every entry anyway, and zeroing gigabytes first would cost
//   seconds that nothing could cancel);
// - first touch of 4 KiB pages: a block of at least kHugePageBytes is
//   mapped on its own, aligned to 2 MiB and marked for transparent huge
//   pages (madvise; the kernel's default "madvise" mode honours it), so the
//   kernel faults it in 2 MiB at a time. A fresh 381 MiB order (10^8
//   entries) took 1.28 s of page faults on 4 KiB pages and 0.04-0.37 s on
//   huge pages on the same VM. Where huge pages are off or unavailable the
//   mapping still works, with 4 KiB pages.
// Smaller blocks come from operator new. Stateless; thread-safe.
#ifndef COMMON_PLAN_SHUFFLES_ORDER_ALLOCATOR_H_
#define COMMON_PLAN_SHUFFLES_ORDER_ALLOCATOR_H_

#include <cstddef>
#include <memory>
#include <new>
#include <utility>

namespace shard::plan {

namespace internal {
inline constexpr size_t kHugePageBytes = size_t{2} << 20;
// `bytes` (>= kHugePageBytes) mapped at a 2 MiB boundary, marked for huge
// pages; throws std::bad_alloc when the mapping fails.
void* MapHugePages(size_t bytes);
void UnmapHugePages(void* block, size_t bytes);
}  // namespace internal

template <typename T>
struct OrderAllocator {
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = OrderAllocator<U>;
  };
  OrderAllocator() = default;
  template <typename U>
  explicit OrderAllocator(const OrderAllocator<U>&) {}

  // Whether allocate(n) returns memory that reads as zeros (a fresh
  // mapping).
  static bool ZeroFilled(size_t n) {
    return n * sizeof(T) >= internal::kHugePageBytes;
  }

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes >= internal::kHugePageBytes) {
      return static_cast<T*>(internal::MapHugePages(bytes));
    }
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* block, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes >= internal::kHugePageBytes) {
      internal::UnmapHugePages(block, bytes);
      return;
    }
    std::allocator<T>().deallocate(block, n);
  }
  // Default construction leaves integers unwritten (see the file comment).
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <typename U>
  bool operator==(const OrderAllocator<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const OrderAllocator<U>&) const {
    return false;
  }
};

}  // namespace shard::plan

#endif  // COMMON_PLAN_SHUFFLES_ORDER_ALLOCATOR_H_
