// The caching allocator's bookkeeping over a fake provider (size classes, reuse, the bound on
// cached bytes, the retry after emptying the cache when the provider is out of memory, stats),
// and the CPU backend's use of it through the public memory_stats().
#include "backend/caching_allocator.h"

#include <myelin/device.h>
#include <myelin/tensor.h>

#include <QtTest>

#include <cstdlib>
#include <map>

using namespace myelin;
using backend::CachingAllocator;

namespace {

// Hands out real memory (so pointers are distinct) and counts; refuses beyond `capacity`.
class FakeProvider final : public backend::BlockProvider {
  public:
    explicit FakeProvider(size_t capacity) : capacity_(capacity) {}
    ~FakeProvider() override {
        for (auto& [p, bytes] : live_)
            std::free(p);
    }
    void* allocate(size_t bytes) override {
        if (in_use_ + bytes > capacity_) return nullptr;
        void* p = std::malloc(bytes);
        live_[p] = bytes;
        in_use_ += bytes;
        ++allocations;
        return p;
    }
    void release(void* p, size_t bytes) override {
        QCOMPARE(live_.at(p), bytes); // released with the size it was allocated with
        live_.erase(p);
        in_use_ -= bytes;
        std::free(p);
        ++releases;
    }
    size_t in_use() const { return in_use_; }
    int allocations = 0;
    int releases = 0;

  private:
    size_t capacity_;
    size_t in_use_ = 0;
    std::map<void*, size_t> live_;
};

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

} // namespace

class TestCachingAllocator : public QObject {
    Q_OBJECT
  private slots:
    void size_classes() {
        QCOMPARE(CachingAllocator::size_class(1), size_t(512));
        QCOMPARE(CachingAllocator::size_class(512), size_t(512));
        QCOMPARE(CachingAllocator::size_class(513), size_t(1024));
        QCOMPARE(CachingAllocator::size_class(64 * KiB), 64 * KiB);
        // Eight classes per power of two: 1 MiB .. 2 MiB in steps of 128 KiB.
        QCOMPARE(CachingAllocator::size_class(MiB + 1), MiB + 128 * KiB);
        QCOMPARE(CachingAllocator::size_class(MiB + 128 * KiB), MiB + 128 * KiB);
        QCOMPARE(CachingAllocator::size_class(2 * MiB - 1), 2 * MiB);
        for (size_t bytes = 64 * KiB; bytes < 64 * MiB; bytes = bytes * 9 / 7 + 13) {
            const size_t c = CachingAllocator::size_class(bytes);
            QVERIFY(c >= bytes);
            QVERIFY2(c - bytes <= bytes / 8, qPrintable(QString::number(bytes)));
            QCOMPARE(CachingAllocator::size_class(c), c); // a class is its own class
        }
    }

    void reuses_freed_blocks_of_the_same_class() {
        FakeProvider provider(64 * MiB);
        CachingAllocator a(provider, 16 * MiB);
        void* p = a.allocate(MiB + 5);
        QVERIFY(p);
        a.deallocate(p, MiB + 5);
        QCOMPARE(a.stats().cached_blocks, int64_t(1));
        // Another request in the same class gets the same block without the provider.
        void* q = a.allocate(MiB + 100);
        QCOMPARE(q, p);
        QCOMPARE(provider.allocations, 1);
        // A different class does not.
        void* r = a.allocate(3 * MiB);
        QVERIFY(r != p);
        QCOMPARE(provider.allocations, 2);
        const MemoryStats s = a.stats();
        QCOMPARE(s.requests, int64_t(3));
        QCOMPARE(s.cache_hits, int64_t(1));
        QCOMPARE(s.allocated_bytes, int64_t(CachingAllocator::size_class(MiB + 100) + 3 * MiB));
        QCOMPARE(s.reserved_bytes, s.allocated_bytes);
        a.deallocate(q, MiB + 100);
        a.deallocate(r, 3 * MiB);
        QCOMPARE(a.stats().allocated_bytes, int64_t(0));
        QCOMPARE(a.stats().peak_allocated_bytes, s.allocated_bytes);
        a.empty_cache();
        QCOMPARE(a.stats().reserved_bytes, int64_t(0));
        QCOMPARE(provider.in_use(), size_t(0));
    }

    void bounds_the_cached_bytes() {
        FakeProvider provider(64 * MiB);
        CachingAllocator a(provider, 2 * MiB);
        void* p = a.allocate(2 * MiB);
        void* q = a.allocate(2 * MiB);
        a.deallocate(p, 2 * MiB); // fits the bound: cached
        a.deallocate(q, 2 * MiB); // beyond it: back to the provider
        QCOMPARE(provider.releases, 1);
        QCOMPARE(a.stats().cached_blocks, int64_t(1));
        QCOMPARE(a.stats().reserved_bytes, int64_t(2 * MiB));
    }

    void empties_the_cache_before_failing() {
        FakeProvider provider(4 * MiB);
        CachingAllocator a(provider, 64 * MiB);
        void* p = a.allocate(3 * MiB);
        a.deallocate(p, 3 * MiB); // cached, still held from the provider
        // 2 MiB does not fit beside the cached 3 MiB: the cache is emptied and the request served.
        void* q = a.allocate(2 * MiB);
        QVERIFY(q);
        QCOMPARE(a.stats().cached_blocks, int64_t(0));
        QCOMPARE(a.stats().reserved_bytes, int64_t(2 * MiB));
        // More than the provider has: null, nothing leaked or miscounted.
        QVERIFY(a.allocate(8 * MiB) == nullptr);
        QCOMPARE(a.stats().allocated_bytes, int64_t(2 * MiB));
        a.deallocate(q, 2 * MiB);
    }

    void reset_peaks() {
        FakeProvider provider(64 * MiB);
        CachingAllocator a(provider, 64 * MiB);
        void* p = a.allocate(4 * MiB);
        a.deallocate(p, 4 * MiB);
        QCOMPARE(a.stats().peak_allocated_bytes, int64_t(4 * MiB));
        a.reset_peaks();
        QCOMPARE(a.stats().peak_allocated_bytes, int64_t(0));
        QCOMPARE(a.stats().peak_reserved_bytes, int64_t(4 * MiB)); // still reserved (cached)
    }

    // Tensors of 64 KiB and more go through the CPU backend's cache: a freed activation's memory
    // comes back for the next tensor of its size class.
    void cpu_tensors_use_the_cache() {
        const MemoryStats before = memory_stats();
        {
            Tensor t = zeros({1000, 1000}); // 4 MB
            QVERIFY(memory_stats().allocated_bytes >= before.allocated_bytes + 4000000);
        }
        const MemoryStats freed = memory_stats();
        QCOMPARE(freed.allocated_bytes, before.allocated_bytes);
        QVERIFY(freed.cached_blocks >= 1);
        {
            Tensor t = ones({999, 1001}); // same size class
            QVERIFY(memory_stats().cache_hits > freed.cache_hits);
            QCOMPARE(t.sum().item<double>(), 999.0 * 1001.0);
        }
        empty_cache();
        QCOMPARE(memory_stats().cached_blocks, int64_t(0));
    }
};

QTEST_APPLESS_MAIN(TestCachingAllocator)
#include "test_caching_allocator.moc"
