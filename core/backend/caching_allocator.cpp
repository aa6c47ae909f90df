#include "backend/caching_allocator.h"

#include <algorithm>
#include <bit>

namespace myelin::backend {

size_t CachingAllocator::size_class(size_t bytes) {
    if (bytes < kMinCachedBytes) return (bytes + 511) & ~size_t(511);
    // Eight classes between consecutive powers of two: step = 2^(floor(log2 bytes) - 3).
    const int top = std::bit_width(bytes) - 1;
    const size_t step = size_t(1) << (top - 3);
    return (bytes + step - 1) & ~(step - 1);
}

void* CachingAllocator::allocate(size_t bytes) {
    const size_t size = size_class(bytes);
    std::lock_guard lock(mutex_);
    ++stats_.requests;
    void* p = take_cached_locked(size);
    if (p) {
        ++stats_.cache_hits;
    } else {
        p = provider_.allocate(size);
        if (!p && cached_bytes_ > 0) { // other sizes hold memory the provider may need
            empty_cache_locked();
            p = provider_.allocate(size);
        }
        if (!p) return nullptr;
        ++stats_.provider_allocations;
        stats_.reserved_bytes += int64_t(size);
        stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
    }
    stats_.allocated_bytes += int64_t(size);
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    return p;
}

void* CachingAllocator::take_cached_locked(size_t size) {
    auto it = free_.find(size);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= size;
    --stats_.cached_blocks;
    return p;
}

void CachingAllocator::deallocate(void* p, size_t bytes) {
    if (!p) return;
    const size_t size = size_class(bytes);
    std::lock_guard lock(mutex_);
    stats_.allocated_bytes -= int64_t(size);
    if (cached_bytes_ + size > max_cached_bytes_) {
        release_locked(p, size);
        return;
    }
    free_[size].push_back(p);
    cached_bytes_ += size;
    ++stats_.cached_blocks;
}

void CachingAllocator::empty_cache() {
    std::lock_guard lock(mutex_);
    empty_cache_locked();
}

void CachingAllocator::empty_cache_locked() {
    for (auto& [size, blocks] : free_)
        for (void* p : blocks)
            release_locked(p, size);
    free_.clear();
    cached_bytes_ = 0;
    stats_.cached_blocks = 0;
}

void CachingAllocator::release_locked(void* p, size_t bytes) {
    provider_.release(p, bytes);
    stats_.reserved_bytes -= int64_t(bytes);
}

MemoryStats CachingAllocator::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void CachingAllocator::reset_peaks() {
    std::lock_guard lock(mutex_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
    stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

} // namespace myelin::backend
