#include "backend/cpu/cpu_backend.h"

#include <cblas.h>
#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace myelin::backend {

namespace {
std::string cpu_features() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return "AVX-512";
    if (__builtin_cpu_supports("avx2")) return "AVX2";
    if (__builtin_cpu_supports("avx")) return "AVX";
    return "SSE";
}
} // namespace

BackendInfo CpuBackend::info() const {
    const int threads = omp_get_max_threads();
    return {DeviceType::CPU, "CPU",
            std::to_string(threads) + (threads == 1 ? " thread, " : " threads, ") + cpu_features()};
}

namespace {

// Freed large blocks kept for reuse. A training step allocates the same activation sizes every
// step; a fresh multi-megabyte block from the OS costs a page fault per 4 KiB on first touch,
// which costs as much as the element-wise op that fills it (measured: ReLU on [128,32,28,28]
// 3.6 ms with fresh pages). Exact-size reuse, bounded so memory stays close to the peak.
class LargeBlockCache {
  public:
    static constexpr size_t kMinBytes = size_t(1) << 20;
    static constexpr size_t kMaxCachedBytes = size_t(256) << 20;

    void* take(size_t bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        for (size_t i = 0; i < blocks_.size(); ++i)
            if (blocks_[i].bytes == bytes) {
                void* p = blocks_[i].ptr;
                cached_ -= bytes;
                blocks_[i] = blocks_.back();
                blocks_.pop_back();
                return p;
            }
        return nullptr;
    }
    // False when the cache is full: the caller returns the block to the OS.
    bool keep(void* p, size_t bytes) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (cached_ + bytes > kMaxCachedBytes) return false;
        blocks_.push_back({p, bytes});
        cached_ += bytes;
        return true;
    }

  private:
    struct Block {
        void* ptr;
        size_t bytes;
    };
    std::mutex mutex_;
    std::vector<Block> blocks_;
    size_t cached_ = 0;
};

// Never destroyed: tensors with static storage duration may free their blocks during exit,
// after function-local statics are gone; the OS reclaims the cached blocks.
LargeBlockCache& large_blocks() {
    static auto* cache = new LargeBlockCache;
    return *cache;
}

size_t aligned_size(size_t nbytes) {
    return (nbytes + 63) & ~size_t(63);
}

} // namespace

void* CpuBackend::allocate(size_t nbytes) {
    if (nbytes == 0) return nullptr;
    if (nbytes >= LargeBlockCache::kMinBytes)
        if (void* p = large_blocks().take(aligned_size(nbytes))) return p;
    // Small blocks: plain malloc (16-byte aligned, the cheapest path: per-op overhead matters).
    // Larger blocks: 64-byte alignment for full cache lines and aligned AVX-512 loads.
    void* p = nbytes <= 1024 ? std::malloc(nbytes) : std::aligned_alloc(64, aligned_size(nbytes));
    if (!p) throw std::bad_alloc();
    return p;
}

void CpuBackend::deallocate(void* p, size_t nbytes) {
    if (nbytes >= LargeBlockCache::kMinBytes && large_blocks().keep(p, aligned_size(nbytes)))
        return;
    std::free(p);
}

void CpuBackend::copy_from_host(void* dst, const void* src, size_t nbytes) {
    if (nbytes) std::memcpy(dst, src, nbytes);
}
void CpuBackend::copy_to_host(void* dst, const void* src, size_t nbytes) {
    if (nbytes) std::memcpy(dst, src, nbytes);
}

void ensure_cpu_registered() {
    // Never destroyed, for the same reason as the block cache: static tensors free through it.
    static auto* cpu = new CpuBackend;
    static const bool registered = (register_backend(DeviceType::CPU, cpu), true);
    (void)registered;
}

} // namespace myelin::backend
