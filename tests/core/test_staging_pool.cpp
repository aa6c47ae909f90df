// The pinned staging buffers of the CUDA backend's host-to-device copies (backend/staging_pool.h)
// over a fake pinned host whose events finish when the test says: a buffer is reused only after
// the copy queued from it has run, the smallest free one that fits is taken, the caller's bytes
// are in the buffer before the copy is queued, and copies the pool should not stage (empty, too
// large, past the pinned limit, pinned memory refused) are left to the caller.
#include "backend/staging_pool.h"

#include <QtTest>

#include <cstring>
#include <map>
#include <vector>

using myelin::backend::PinnedHost;
using myelin::backend::StagingPool;

namespace {

class FakePinnedHost final : public PinnedHost {
  public:
    void* allocate(size_t bytes) override {
        if (refuse) return nullptr;
        void* p = ::operator new(bytes);
        live[p] = bytes;
        return p;
    }
    void release(void* p) override {
        QVERIFY(live.erase(p) == 1);
        ::operator delete(p);
    }
    Event create_event() override {
        auto* e = new int(next_event++);
        done[e] = true;
        return e;
    }
    void destroy_event(Event e) override {
        QVERIFY(done.erase(e) == 1);
        delete static_cast<int*>(e);
    }
    void record(Event e) override { done[e] = false; } // in flight until finish_all()
    bool finished(Event e) override { return done.at(e); }
    void synchronize(Event e) override {
        done.at(e) = true;
        ++waits;
    }
    void finish_all() {
        for (auto& [e, d] : done)
            d = true;
    }

    bool refuse = false;
    int next_event = 0;
    int waits = 0;
    std::map<void*, size_t> live;
    std::map<Event, bool> done;
};

// Stages `bytes` bytes of value `fill`; returns the buffer the copy was queued from (null when
// the pool declined) after checking it held the bytes when the copy was queued.
void* stage(StagingPool& pool, size_t bytes, unsigned char fill = 7) {
    std::vector<unsigned char> src(bytes, fill);
    void* used = nullptr;
    const bool staged = pool.stage(src.data(), bytes, [&](const void* buffer) {
        used = const_cast<void*>(buffer);
        if (std::memcmp(buffer, src.data(), bytes) != 0) QFAIL("bytes not in the buffer");
    });
    if (staged != (used != nullptr)) qFatal("stage() result and enqueue disagree");
    return used;
}

} // namespace

class TestStagingPool : public QObject {
    Q_OBJECT
  private slots:
    void buffer_in_flight_is_not_reused() {
        FakePinnedHost host;
        StagingPool pool(host);
        void* a = stage(pool, 1000);
        QVERIFY(a);
        void* b = stage(pool, 1000); // a's copy has not run: a second buffer
        QVERIFY(b && b != a);
        QCOMPARE(pool.buffer_count(), size_t(2));
        host.finish_all();
        QCOMPARE(stage(pool, 1000), a); // both free again: the first that fits
        QCOMPARE(pool.buffer_count(), size_t(2));
    }

    void smallest_free_buffer_that_fits() {
        FakePinnedHost host;
        StagingPool pool(host);
        void* big = stage(pool, 1 << 20);
        void* small = stage(pool, 100);
        QCOMPARE(host.live.at(big), size_t(1 << 20));
        QCOMPARE(host.live.at(small), StagingPool::kMinBuffer);
        host.finish_all();
        QCOMPARE(stage(pool, 200), small);
        host.finish_all();
        QCOMPARE(stage(pool, StagingPool::kMinBuffer + 1), big); // small is too small
        QCOMPARE(pool.pinned_bytes(), size_t(1 << 20) + StagingPool::kMinBuffer);
    }

    void sizes_round_to_powers_of_two() {
        QCOMPARE(StagingPool::buffer_size(1), StagingPool::kMinBuffer);
        QCOMPARE(StagingPool::buffer_size(401408), size_t(512) << 10); // a CNN batch
        QCOMPARE(StagingPool::buffer_size(size_t(1) << 20), size_t(1) << 20);
    }

    void copies_left_to_the_caller() {
        FakePinnedHost host;
        StagingPool pool(host);
        QVERIFY(!stage(pool, 0));
        QVERIFY(!stage(pool, StagingPool::kMaxStaged + 1));
        host.refuse = true;
        QVERIFY(!stage(pool, 1000));
        QCOMPARE(pool.buffer_count(), size_t(0));
        host.refuse = false;
        // Past the pinned limit while every buffer is in flight: declined, nothing allocated.
        const size_t n = StagingPool::kPinnedLimit / StagingPool::kMaxStaged;
        for (size_t i = 0; i < n; ++i)
            QVERIFY(stage(pool, StagingPool::kMaxStaged));
        QVERIFY(!stage(pool, 1000));
        QCOMPARE(pool.pinned_bytes(), StagingPool::kPinnedLimit);
        host.finish_all();
        QVERIFY(stage(pool, 1000)); // a finished buffer serves it
        QCOMPARE(pool.buffer_count(), n);
    }

    void destruction_waits_for_copies_in_flight() {
        FakePinnedHost host;
        {
            StagingPool pool(host);
            stage(pool, 10);
            stage(pool, 10);
            host.finish_all();
            stage(pool, 10); // one in flight
        }
        QCOMPARE(host.waits, 2); // every buffer that ever queued a copy is waited for
        QVERIFY(host.live.empty());
        QVERIFY(host.done.empty());
    }
};

QTEST_APPLESS_MAIN(TestStagingPool)
#include "test_staging_pool.moc"
