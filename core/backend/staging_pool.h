#pragma once
// Pinned staging buffers for asynchronous host-to-device copies (the CUDA backend's
// copy_from_host). A copy goes through a page-locked buffer: the host bytes are copied into it,
// the device copy is queued from it (cudaMemcpyAsync on the stream every kernel uses, so whatever
// reads the destination runs after it), and an event recorded behind the copy says when the
// buffer may be used again. The caller's memory is free to change as soon as the call returns,
// and the host does not wait for the device: the DataLoader's next batch goes up while the step
// before it still runs, as PyTorch's pin_memory + non_blocking=True copies do.
//
// The bookkeeping is host code over a PinnedHost interface (cudaHostAlloc, events): the CUDA
// backend passes the runtime's, tests a fake one (test_staging_pool).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

namespace myelin::backend {

class PinnedHost {
  public:
    virtual ~PinnedHost() = default;
    virtual void* allocate(size_t bytes) = 0; // page-locked host memory, null when refused
    virtual void release(void* p) = 0;
    using Event = void*;
    virtual Event create_event() = 0;
    virtual void destroy_event(Event e) = 0;
    virtual void record(Event e) = 0;      // behind the work queued so far
    virtual bool finished(Event e) = 0;    // the work before the recording has run
    virtual void synchronize(Event e) = 0; // waits for it
};

class StagingPool {
  public:
    static constexpr size_t kMinBuffer = size_t(64) << 10;    // smallest buffer
    static constexpr size_t kMaxStaged = size_t(64) << 20;    // larger copies are not staged
    static constexpr size_t kPinnedLimit = size_t(256) << 20; // pinned bytes held at most

    explicit StagingPool(PinnedHost& host) : host_(host) {}
    ~StagingPool(); // waits for the copies in flight, then frees every buffer
    StagingPool(const StagingPool&) = delete;
    StagingPool& operator=(const StagingPool&) = delete;

    // Copies `bytes` of `src` into a buffer whose earlier copy has finished, calls
    // enqueue(buffer) (which queues the device copy from it) and records the buffer's event
    // behind it. Returns false, having done nothing, when the copy is not staged (empty, larger
    // than kMaxStaged, or no buffer free within kPinnedLimit / pinned memory refused): the
    // caller then copies synchronously.
    template <typename Enqueue> bool stage(const void* src, size_t bytes, Enqueue&& enqueue) {
        std::lock_guard<std::mutex> lock(mutex_);
        Buffer* b = acquire(bytes);
        if (!b) return false;
        std::memcpy(b->ptr, src, bytes);
        enqueue(b->ptr);
        host_.record(b->event);
        b->recorded = true;
        return true;
    }

    size_t buffer_count() const;
    size_t pinned_bytes() const;
    static size_t buffer_size(size_t bytes); // a power of two, at least kMinBuffer

  private:
    struct Buffer {
        void* ptr = nullptr;
        size_t size = 0;
        PinnedHost::Event event = nullptr;
        bool recorded = false; // a copy was queued from it (its event means something)
    };
    // The smallest free buffer that holds `bytes`, else a new one; null when neither.
    Buffer* acquire(size_t bytes);

    PinnedHost& host_;
    mutable std::mutex mutex_;
    std::vector<Buffer> buffers_;
    size_t pinned_ = 0;
};

} // namespace myelin::backend
