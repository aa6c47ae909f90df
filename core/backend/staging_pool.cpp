#include "backend/staging_pool.h"

#include <algorithm>
#include <bit>

namespace myelin::backend {

StagingPool::~StagingPool() {
    for (Buffer& b : buffers_) {
        if (b.recorded) host_.synchronize(b.event); // the device may still read it
        host_.destroy_event(b.event);
        host_.release(b.ptr);
    }
}

size_t StagingPool::buffer_size(size_t bytes) {
    return std::max(kMinBuffer, std::bit_ceil(bytes));
}

size_t StagingPool::buffer_count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return buffers_.size();
}

size_t StagingPool::pinned_bytes() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return pinned_;
}

StagingPool::Buffer* StagingPool::acquire(size_t bytes) {
    if (bytes == 0 || bytes > kMaxStaged) return nullptr;
    Buffer* best = nullptr;
    for (Buffer& b : buffers_)
        if (b.size >= bytes && (!best || b.size < best->size) &&
            (!b.recorded || host_.finished(b.event)))
            best = &b;
    if (best) return best;
    const size_t size = buffer_size(bytes);
    if (pinned_ + size > kPinnedLimit) return nullptr;
    void* p = host_.allocate(size);
    if (!p) return nullptr;
    Buffer b;
    b.ptr = p;
    b.size = size;
    try {
        b.event = host_.create_event();
    } catch (...) {
        host_.release(p);
        throw;
    }
    buffers_.push_back(b);
    pinned_ += size;
    return &buffers_.back();
}

} // namespace myelin::backend
