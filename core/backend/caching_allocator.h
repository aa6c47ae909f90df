#pragma once
// A caching allocator for tensor storage: freed blocks are kept in free lists by size class and
// handed out again, so a training step — which allocates the same activation and gradient sizes
// every step — stops paying the operating system (mmap/munmap, a page fault per 4 KiB on first
// touch) for memory it used a moment ago. The design is PyTorch's CUDA caching allocator's,
// simplified to what host memory needs:
//
//  * a request rounds up to a size class (512-byte steps below kMinCachedBytes, else eight
//    classes per power of two: at most 12.5% slack) and is served from that class's free list,
//    newest first (warm in cache); the CPU backend sends only requests of kMinCachedBytes and more
//    (below that malloc is as fast, and its thread caches already recycle small blocks);
//  * the bytes kept unused are bounded (max_cached_bytes); a free beyond the bound returns the
//    block to the provider; empty_cache() returns them all;
//  * statistics: bytes in use and reserved (in use + cached), their peaks, requests, hits.
//
// The bookkeeping is host code over a BlockProvider, so it is tested with a fake provider and the
// CUDA backend can reuse it over cudaMalloc/cudaFree.
#include <myelin/device.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace myelin::backend {

class BlockProvider {
  public:
    virtual ~BlockProvider() = default;
    virtual void* allocate(size_t bytes) = 0; // null when out of memory
    virtual void release(void* p, size_t bytes) = 0;
};

class CachingAllocator {
  public:
    static constexpr size_t kMinCachedBytes = size_t(64) << 10;

    CachingAllocator(BlockProvider& provider, size_t max_cached_bytes)
        : provider_(provider), max_cached_bytes_(max_cached_bytes) {}
    ~CachingAllocator() { empty_cache(); }
    CachingAllocator(const CachingAllocator&) = delete;
    CachingAllocator& operator=(const CachingAllocator&) = delete;

    // At least `bytes` bytes; null when the provider is out of memory even after the cache was
    // emptied. `bytes` must be the same in the matching deallocate().
    void* allocate(size_t bytes);
    void deallocate(void* p, size_t bytes);
    // Returns every cached block to the provider.
    void empty_cache();

    MemoryStats stats() const;
    void reset_peaks();

    // The size class of a request: a multiple of 512 bytes below kMinCachedBytes, else rounded
    // up to one of eight steps per power of two.
    static size_t size_class(size_t bytes);

  private:
    void* take_cached_locked(size_t size); // null when the class's free list is empty
    void empty_cache_locked();
    void release_locked(void* p, size_t bytes);

    BlockProvider& provider_;
    const size_t max_cached_bytes_;
    mutable std::mutex mutex_;
    std::unordered_map<size_t, std::vector<void*>> free_; // by size class
    size_t cached_bytes_ = 0;
    MemoryStats stats_;
};

} // namespace myelin::backend
