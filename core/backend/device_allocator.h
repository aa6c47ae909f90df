#pragma once
// The caching allocator for device memory, as PyTorch's CUDA caching allocator
// (c10/cuda/CUDACachingAllocator.cpp), with the same sizes and rules:
//
//  * a request rounds up to a multiple of 512 bytes;
//  * requests of at most 1 MiB come from the small pool, carved out of 2 MiB segments; larger
//    ones from the large pool, whose segments are 20 MiB for requests below 10 MiB and the
//    request rounded up to 2 MiB otherwise;
//  * a free block is found best-fit (the smallest that fits, then the lowest address) among the
//    blocks of the request's stream; a block much larger than the request is split (small pool:
//    when at least 512 bytes remain, large pool: when more than 1 MiB remains), and a freed
//    block merges with its free neighbours in the same segment;
//  * when the device is out of memory, the segments with nothing in use are returned and the
//    allocation is tried once more; then OutOfMemoryError says what was requested, allocated,
//    cached and the device's total.
//
// The bookkeeping is host code over a DeviceMemory interface: the CUDA backend passes
// cudaMalloc/cudaFree, tests a fake device.
#include <myelin/device.h>
#include <myelin/error.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <unordered_map>

namespace myelin::backend {

class DeviceMemory {
  public:
    virtual ~DeviceMemory() = default;
    virtual void* allocate(size_t bytes) = 0; // null when the device is out of memory
    virtual void release(void* p, size_t bytes) = 0;
    virtual size_t total_memory() const = 0;
    virtual std::string device_name() const = 0; // "cuda:0", for messages
};

class OutOfMemoryError : public DeviceError {
  public:
    using DeviceError::DeviceError;
};

// A stream as the allocator sees it (cudaStream_t's value); blocks never move between streams.
using StreamId = uint64_t;

class DeviceCachingAllocator {
  public:
    static constexpr size_t kMinBlockSize = 512;
    static constexpr size_t kSmallSize = size_t(1) << 20;    // largest small-pool request
    static constexpr size_t kSmallBuffer = size_t(2) << 20;  // small-pool segment
    static constexpr size_t kLargeBuffer = size_t(20) << 20; // segment for 1-10 MiB requests
    static constexpr size_t kMinLargeAlloc = size_t(10) << 20;
    static constexpr size_t kRoundLarge = size_t(2) << 20;

    explicit DeviceCachingAllocator(DeviceMemory& memory) : memory_(memory) {}
    ~DeviceCachingAllocator();
    DeviceCachingAllocator(const DeviceCachingAllocator&) = delete;
    DeviceCachingAllocator& operator=(const DeviceCachingAllocator&) = delete;

    // Throws OutOfMemoryError when the device cannot hold the block even after the cache was
    // returned. A zero-byte request returns null.
    void* allocate(size_t bytes, StreamId stream = 0);
    // p must come from allocate() (null does nothing).
    void deallocate(void* p);
    // Returns every segment with nothing in use to the device.
    void empty_cache();

    MemoryStats stats() const;
    void reset_peaks();
    // The size of the block behind an allocation (rounded, perhaps more when not worth a split).
    size_t block_size(const void* p) const;
    size_t segment_count() const;

    static size_t round_size(size_t bytes);
    static size_t segment_size(size_t rounded); // what a new segment for this request takes

  private:
    struct Block {
        char* ptr = nullptr;
        size_t size = 0;
        StreamId stream = 0;
        bool small = false;
        bool allocated = false;
        Block* prev = nullptr; // neighbours within the segment
        Block* next = nullptr;
    };
    struct ByStreamSizeAddress {
        bool operator()(const Block* a, const Block* b) const {
            if (a->stream != b->stream) return a->stream < b->stream;
            if (a->size != b->size) return a->size < b->size;
            return a->ptr < b->ptr;
        }
    };
    using Pool = std::set<Block*, ByStreamSizeAddress>;

    Pool& pool_for(bool small) { return small ? small_pool_ : large_pool_; }
    Block* best_fit_locked(Pool& pool, size_t size, StreamId stream);
    Block* new_segment_locked(size_t size, bool small, StreamId stream);
    void split_locked(Block* block, size_t size);
    void merge_locked(Block* block);
    void release_free_segments_locked();
    [[noreturn]] void throw_out_of_memory_locked(size_t requested) const;

    DeviceMemory& memory_;
    mutable std::mutex mutex_;
    Pool small_pool_;
    Pool large_pool_;
    std::unordered_map<const void*, Block*> active_;
    MemoryStats stats_;
};

} // namespace myelin::backend
