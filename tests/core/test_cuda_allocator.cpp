// The device caching allocator's bookkeeping (PyTorch's CUDA caching allocator rules) over a fake
// device memory: rounding, pool choice, splitting, merging of neighbours, best fit, streams, the
// out-of-memory retry and its message, statistics. Nothing here needs a GPU: the CUDA backend
// runs the same code over cudaMalloc/cudaFree.
#include "backend/device_allocator.h"

#include <QtTest>

#include <cstdint>
#include <map>

using namespace myelin;
using backend::DeviceCachingAllocator;
using backend::OutOfMemoryError;

namespace {

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

// Addresses from a fake address space (never dereferenced); refuses beyond `capacity` bytes.
class FakeDevice final : public backend::DeviceMemory {
  public:
    explicit FakeDevice(size_t capacity) : capacity_(capacity) {}
    void* allocate(size_t bytes) override {
        ++attempts;
        if (in_use_ + bytes > capacity_) return nullptr;
        void* p = reinterpret_cast<void*>(next_);
        next_ += bytes + 64 * MiB; // segments never touch: merging must not cross them
        live_[p] = bytes;
        in_use_ += bytes;
        ++allocations;
        return p;
    }
    void release(void* p, size_t bytes) override {
        QCOMPARE(live_.at(p), bytes); // released whole, with the size it was allocated with
        live_.erase(p);
        in_use_ -= bytes;
        ++releases;
    }
    size_t total_memory() const override { return capacity_; }
    std::string device_name() const override { return "cuda:0"; }
    size_t in_use() const { return in_use_; }
    int attempts = 0;
    int allocations = 0;
    int releases = 0;

  private:
    size_t capacity_;
    size_t in_use_ = 0;
    uintptr_t next_ = uintptr_t(1) << 32;
    std::map<void*, size_t> live_;
};

// Addresses as numbers (QCOMPARE would compare char pointers as strings).
uintptr_t addr(const void* p) {
    return reinterpret_cast<uintptr_t>(p);
}

} // namespace

class TestCudaAllocator : public QObject {
    Q_OBJECT
  private slots:
    void rounds_to_512_bytes() {
        QCOMPARE(DeviceCachingAllocator::round_size(1), size_t(512));
        QCOMPARE(DeviceCachingAllocator::round_size(512), size_t(512));
        QCOMPARE(DeviceCachingAllocator::round_size(513), size_t(1024));
        QCOMPARE(DeviceCachingAllocator::round_size(3 * MiB + 1), 3 * MiB + 512);
        FakeDevice device(1024 * MiB);
        DeviceCachingAllocator alloc(device);
        void* p = alloc.allocate(100);
        QCOMPARE(alloc.block_size(p), size_t(512));
        QCOMPARE(alloc.stats().allocated_bytes, int64_t(512));
        QCOMPARE(alloc.allocate(0), nullptr);
        alloc.deallocate(p);
    }

    void segment_sizes_follow_the_pools() {
        QCOMPARE(DeviceCachingAllocator::segment_size(512), 2 * MiB);            // small pool
        QCOMPARE(DeviceCachingAllocator::segment_size(1 * MiB), 2 * MiB);        // still small
        QCOMPARE(DeviceCachingAllocator::segment_size(1 * MiB + 512), 20 * MiB); // large, < 10 MiB
        QCOMPARE(DeviceCachingAllocator::segment_size(10 * MiB), 10 * MiB);      // rounded to 2 MiB
        QCOMPARE(DeviceCachingAllocator::segment_size(11 * MiB), 12 * MiB);
    }

    void small_requests_share_a_two_mib_segment() {
        FakeDevice device(1024 * MiB);
        DeviceCachingAllocator alloc(device);
        void* a = alloc.allocate(1000); // 1024
        void* b = alloc.allocate(300 * KiB);
        void* c = alloc.allocate(1 * MiB); // the largest small request
        QCOMPARE(device.allocations, 1);   // all carved from one 2 MiB segment
        QCOMPARE(alloc.stats().reserved_bytes, int64_t(2 * MiB));
        QCOMPARE(addr(b), addr(a) + 1024); // split: consecutive blocks
        QCOMPARE(addr(c), addr(b) + 300 * KiB);
        void* d = alloc.allocate(1 * MiB); // does not fit the rest: a second small segment
        QCOMPARE(device.allocations, 2);
        QCOMPARE(alloc.segment_count(), size_t(2));
        for (void* p : {a, b, c, d})
            alloc.deallocate(p);
    }

    void large_requests_use_the_large_pool() {
        FakeDevice device(1024 * MiB);
        DeviceCachingAllocator alloc(device);
        void* small = alloc.allocate(4 * KiB);
        void* large = alloc.allocate(3 * MiB); // 20 MiB segment, split: 17 MiB remain free
        QCOMPARE(device.allocations, 2);
        QCOMPARE(alloc.stats().reserved_bytes, int64_t(22 * MiB));
        QCOMPARE(alloc.block_size(large), 3 * MiB);
        void* large2 = alloc.allocate(5 * MiB); // from the 17 MiB remainder
        QCOMPARE(device.allocations, 2);
        QCOMPARE(addr(large2), addr(large) + 3 * MiB);
        // A remainder of at most 1 MiB is not worth a block in the large pool: no split.
        void* big = alloc.allocate(12 * MiB - 512); // segment of 12 MiB, 512 bytes left over
        QCOMPARE(alloc.block_size(big), 12 * MiB);
        for (void* p : {small, large, large2, big})
            alloc.deallocate(p);
    }

    void freed_blocks_merge_with_free_neighbours() {
        FakeDevice device(1024 * MiB);
        DeviceCachingAllocator alloc(device);
        void* a = alloc.allocate(256 * KiB);
        void* b = alloc.allocate(256 * KiB);
        void* c = alloc.allocate(256 * KiB);
        // Free blocks: the segment's tail only (2 MiB - 768 KiB).
        QCOMPARE(alloc.stats().cached_blocks, int64_t(1));
        alloc.deallocate(a);
        QCOMPARE(alloc.stats().cached_blocks, int64_t(2)); // a, tail: not neighbours
        alloc.deallocate(c);
        QCOMPARE(alloc.stats().cached_blocks, int64_t(2)); // c merged into the tail
        alloc.deallocate(b);
        QCOMPARE(alloc.stats().cached_blocks, int64_t(1)); // a + b + (c + tail): whole again
        // The whole segment is one block: a request of 2 MiB takes it without the device.
        void* whole = alloc.allocate(1 * MiB);
        QCOMPARE(whole, a);
        QCOMPARE(device.allocations, 1);
        alloc.deallocate(whole);
        alloc.empty_cache(); // one whole free segment: returned
        QCOMPARE(device.releases, 1);
        QCOMPARE(alloc.stats().reserved_bytes, int64_t(0));
    }

    void best_fit_takes_the_smallest_block_that_fits() {
        FakeDevice device(1024 * MiB);
        DeviceCachingAllocator alloc(device);
        // Free holes of 64 KiB and 16 KiB separated by blocks in use.
        void* hole64 = alloc.allocate(64 * KiB);
        void* keep1 = alloc.allocate(512);
        void* hole16 = alloc.allocate(16 * KiB);
        void* keep2 = alloc.allocate(512);
        alloc.deallocate(hole64);
        alloc.deallocate(hole16);
        void* p = alloc.allocate(10 * KiB); // fits both holes and the tail: the 16 KiB one wins
        QCOMPARE(p, hole16);
        void* q = alloc.allocate(20 * KiB); // only the 64 KiB hole and the tail: the hole
        QCOMPARE(q, hole64);
        QCOMPARE(device.allocations, 1);
        // Every request after the first was carved from cached memory.
        QCOMPARE(alloc.stats().requests, int64_t(6));
        QCOMPARE(alloc.stats().cache_hits, int64_t(5));
        for (void* x : {p, q, keep1, keep2})
            alloc.deallocate(x);
    }

    void blocks_stay_with_their_stream() {
        FakeDevice device(1024 * MiB);
        DeviceCachingAllocator alloc(device);
        void* on_a = alloc.allocate(4 * KiB, /*stream=*/1);
        alloc.deallocate(on_a);
        void* on_b = alloc.allocate(4 * KiB, /*stream=*/2); // stream 1's free block is not used
        QCOMPARE(device.allocations, 2);
        QVERIFY(on_b != on_a);
        void* again_a = alloc.allocate(4 * KiB, 1); // stream 1 reuses its own block
        QCOMPARE(again_a, on_a);
        QCOMPARE(device.allocations, 2);
        alloc.deallocate(on_b);
        alloc.deallocate(again_a);
    }

    void out_of_memory_frees_the_cache_and_retries_once() {
        FakeDevice device(40 * MiB);
        DeviceCachingAllocator alloc(device);
        void* a = alloc.allocate(15 * MiB); // a 16 MiB segment... rounded to 2 MiB: 16 MiB
        void* b = alloc.allocate(15 * MiB); // 32 MiB reserved
        alloc.deallocate(b);                // cached: 16 MiB
        // 20 MiB does not fit the free 16 MiB block nor the device's remaining 8 MiB: the cache
        // is returned and the retry succeeds.
        const int attempts = device.attempts;
        void* c = alloc.allocate(20 * MiB);
        QCOMPARE(device.attempts, attempts + 2);
        QCOMPARE(device.releases, 1);
        QCOMPARE(alloc.stats().reserved_bytes, int64_t(36 * MiB));
        // Now nothing is cached and the device is full: the error says the numbers.
        QString message;
        try {
            alloc.allocate(8 * MiB);
            QFAIL("expected OutOfMemoryError");
        } catch (const OutOfMemoryError& e) {
            message = QString::fromStdString(e.what());
        }
        QVERIFY2(message.contains("cuda:0 is out of memory"), qPrintable(message));
        QVERIFY2(message.contains("tried to allocate 8.00 MiB"), qPrintable(message));
        QVERIFY2(message.contains("36.00 MiB allocated"), qPrintable(message));
        QVERIFY2(message.contains("0 bytes cached"), qPrintable(message));
        QVERIFY2(message.contains("40.00 MiB total"), qPrintable(message));
        // The failed request changed nothing.
        QCOMPARE(alloc.stats().allocated_bytes, int64_t(36 * MiB));
        QVERIFY_THROWS_EXCEPTION(myelin::DeviceError,
                                 alloc.deallocate(static_cast<char*>(a) + 512));
        alloc.deallocate(a);
        alloc.deallocate(c);
    }

    void stats_track_allocated_reserved_and_peaks() {
        FakeDevice device(1024 * MiB);
        DeviceCachingAllocator alloc(device);
        void* a = alloc.allocate(3 * MiB);
        void* b = alloc.allocate(100 * KiB);
        MemoryStats s = alloc.stats();
        QCOMPARE(s.allocated_bytes, int64_t(3 * MiB + 100 * KiB));
        QCOMPARE(s.reserved_bytes, int64_t(22 * MiB));
        QCOMPARE(s.requests, int64_t(2));
        QCOMPARE(s.provider_allocations, int64_t(2));
        alloc.deallocate(a);
        s = alloc.stats();
        QCOMPARE(s.allocated_bytes, int64_t(100 * KiB));
        QCOMPARE(s.peak_allocated_bytes, int64_t(3 * MiB + 100 * KiB));
        QCOMPARE(s.peak_reserved_bytes, int64_t(22 * MiB));
        alloc.reset_peaks();
        QCOMPARE(alloc.stats().peak_allocated_bytes, int64_t(100 * KiB));
        alloc.empty_cache(); // the large segment is free and returned; the small one is in use
        s = alloc.stats();
        QCOMPARE(s.reserved_bytes, int64_t(2 * MiB));
        QCOMPARE(device.in_use(), 2 * MiB);
        alloc.deallocate(b);
        alloc.empty_cache();
        QCOMPARE(device.in_use(), size_t(0));
        QCOMPARE(alloc.stats().cached_blocks, int64_t(0));
    }
};

QTEST_APPLESS_MAIN(TestCudaAllocator)
#include "test_cuda_allocator.moc"
