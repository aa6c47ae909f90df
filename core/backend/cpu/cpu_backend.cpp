#include "backend/cpu/cpu_backend.h"

#include <cblas.h>
#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <string>

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

void* CpuBackend::allocate(size_t nbytes) {
    if (nbytes == 0) return nullptr;
    // Small blocks: plain malloc (16-byte aligned, the cheapest path: per-op overhead matters).
    // Larger blocks: 64-byte alignment for full cache lines and aligned AVX-512 loads.
    void* p =
        nbytes <= 1024 ? std::malloc(nbytes) : std::aligned_alloc(64, (nbytes + 63) & ~size_t(63));
    if (!p) throw std::bad_alloc();
    return p;
}

void CpuBackend::deallocate(void* p, size_t) {
    std::free(p);
}

void CpuBackend::copy_from_host(void* dst, const void* src, size_t nbytes) {
    if (nbytes) std::memcpy(dst, src, nbytes);
}
void CpuBackend::copy_to_host(void* dst, const void* src, size_t nbytes) {
    if (nbytes) std::memcpy(dst, src, nbytes);
}

void ensure_cpu_registered() {
    static CpuBackend cpu;
    static const bool registered = (register_backend(DeviceType::CPU, &cpu), true);
    (void)registered;
}

} // namespace myelin::backend
