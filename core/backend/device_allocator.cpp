#include "backend/device_allocator.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace myelin::backend {

namespace {
std::string format_bytes(int64_t bytes) {
    char text[48];
    if (bytes >= (int64_t(1) << 30))
        std::snprintf(text, sizeof text, "%.2f GiB", double(bytes) / double(int64_t(1) << 30));
    else if (bytes >= (int64_t(1) << 20))
        std::snprintf(text, sizeof text, "%.2f MiB", double(bytes) / double(1 << 20));
    else
        std::snprintf(text, sizeof text, "%lld bytes", static_cast<long long>(bytes));
    return text;
}
} // namespace

size_t DeviceCachingAllocator::round_size(size_t bytes) {
    if (bytes < kMinBlockSize) return kMinBlockSize;
    return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

size_t DeviceCachingAllocator::segment_size(size_t rounded) {
    if (rounded <= kSmallSize) return kSmallBuffer;
    if (rounded < kMinLargeAlloc) return kLargeBuffer;
    return (rounded + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

DeviceCachingAllocator::~DeviceCachingAllocator() {
    // Blocks still in use belong to tensors that outlive the allocator (static ones at exit):
    // their segments stay with the device, which is torn down with the process.
    std::lock_guard lock(mutex_);
    release_free_segments_locked();
}

void* DeviceCachingAllocator::allocate(size_t bytes, StreamId stream) {
    if (bytes == 0) return nullptr;
    const size_t size = round_size(bytes);
    const bool small = size <= kSmallSize;
    std::lock_guard lock(mutex_);
    ++stats_.requests;
    Pool& pool = pool_for(small);
    Block* block = best_fit_locked(pool, size, stream);
    if (block) {
        pool.erase(block);
        --stats_.cached_blocks;
        ++stats_.cache_hits;
    } else {
        block = new_segment_locked(size, small, stream);
        if (!block) { // cached segments of other sizes hold memory the device needs: once more
            release_free_segments_locked();
            block = new_segment_locked(size, small, stream);
        }
        if (!block) throw_out_of_memory_locked(bytes);
    }
    split_locked(block, size);
    block->allocated = true;
    active_[block->ptr] = block;
    stats_.allocated_bytes += int64_t(block->size);
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    return block->ptr;
}

DeviceCachingAllocator::Block* DeviceCachingAllocator::best_fit_locked(Pool& pool, size_t size,
                                                                       StreamId stream) {
    Block key;
    key.stream = stream;
    key.size = size;
    auto it = pool.lower_bound(&key);
    if (it == pool.end() || (*it)->stream != stream) return nullptr;
    return *it;
}

DeviceCachingAllocator::Block* DeviceCachingAllocator::new_segment_locked(size_t size, bool small,
                                                                          StreamId stream) {
    const size_t bytes = segment_size(size);
    void* p = memory_.allocate(bytes);
    if (!p) return nullptr;
    ++stats_.provider_allocations;
    stats_.reserved_bytes += int64_t(bytes);
    stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
    auto* block = new Block;
    block->ptr = static_cast<char*>(p);
    block->size = bytes;
    block->stream = stream;
    block->small = small;
    return block;
}

void DeviceCachingAllocator::split_locked(Block* block, size_t size) {
    const size_t remaining = block->size - size;
    const bool worth_it = block->small ? remaining >= kMinBlockSize : remaining > kSmallSize;
    if (!worth_it) return;
    auto* rest = new Block;
    rest->ptr = block->ptr + size;
    rest->size = remaining;
    rest->stream = block->stream;
    rest->small = block->small;
    rest->prev = block;
    rest->next = block->next;
    if (rest->next) rest->next->prev = rest;
    block->next = rest;
    block->size = size;
    pool_for(rest->small).insert(rest);
    ++stats_.cached_blocks;
}

void DeviceCachingAllocator::deallocate(void* p) {
    if (!p) return;
    std::lock_guard lock(mutex_);
    auto it = active_.find(p);
    if (it == active_.end())
        throw DeviceError(memory_.device_name() +
                          ": deallocate() of a pointer this allocator did not hand out");
    Block* block = it->second;
    active_.erase(it);
    block->allocated = false;
    stats_.allocated_bytes -= int64_t(block->size);
    merge_locked(block);
}

void DeviceCachingAllocator::merge_locked(Block* block) {
    Pool& pool = pool_for(block->small);
    // Absorb a free neighbour on either side; the merged block keeps the lower address.
    if (Block* prev = block->prev; prev && !prev->allocated) {
        pool.erase(prev);
        --stats_.cached_blocks;
        prev->size += block->size;
        prev->next = block->next;
        if (prev->next) prev->next->prev = prev;
        delete block;
        block = prev;
    }
    if (Block* next = block->next; next && !next->allocated) {
        pool.erase(next);
        --stats_.cached_blocks;
        block->size += next->size;
        block->next = next->next;
        if (block->next) block->next->prev = block;
        delete next;
    }
    pool.insert(block);
    ++stats_.cached_blocks;
}

void DeviceCachingAllocator::empty_cache() {
    std::lock_guard lock(mutex_);
    release_free_segments_locked();
}

void DeviceCachingAllocator::release_free_segments_locked() {
    for (Pool* pool : {&small_pool_, &large_pool_}) {
        std::vector<Block*> whole;
        for (Block* b : *pool)
            if (!b->prev && !b->next) whole.push_back(b); // a segment with nothing in use
        for (Block* b : whole) {
            pool->erase(b);
            --stats_.cached_blocks;
            memory_.release(b->ptr, b->size);
            stats_.reserved_bytes -= int64_t(b->size);
            delete b;
        }
    }
}

void DeviceCachingAllocator::throw_out_of_memory_locked(size_t requested) const {
    const int64_t cached = stats_.reserved_bytes - stats_.allocated_bytes;
    throw OutOfMemoryError(memory_.device_name() + " is out of memory: tried to allocate " +
                           format_bytes(int64_t(requested)) + "; " +
                           format_bytes(stats_.allocated_bytes) + " allocated, " +
                           format_bytes(cached) + " cached (reserved, unused), " +
                           format_bytes(int64_t(memory_.total_memory())) + " total");
}

MemoryStats DeviceCachingAllocator::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void DeviceCachingAllocator::reset_peaks() {
    std::lock_guard lock(mutex_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
    stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

size_t DeviceCachingAllocator::block_size(const void* p) const {
    std::lock_guard lock(mutex_);
    auto it = active_.find(p);
    return it == active_.end() ? 0 : it->second->size;
}

size_t DeviceCachingAllocator::segment_count() const {
    std::lock_guard lock(mutex_);
    size_t n = 0;
    for (const auto& [p, b] : active_)
        n += b->prev == nullptr;
    for (const Pool* pool : {&small_pool_, &large_pool_})
        for (const Block* b : *pool)
            n += b->prev == nullptr;
    return n;
}

} // namespace myelin::backend
