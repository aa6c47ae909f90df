#include "backend/cpu/cpu_backend.h"

#include "backend/caching_allocator.h"

#include <cblas.h>
#include <omp.h>

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
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

bool CpuBackend::supports(Primitive p, DType dtype) const {
    const bool floating = dtype == DType::Float32 || dtype == DType::Float64;
    switch (p) {
    case Primitive::Copy:
    case Primitive::Fill:
    case Primitive::Where:
    case Primitive::IndexSelect:
    case Primitive::Gather:
        return true;
    case Primitive::Unary: // predicates read any stored dtype but the half types
        return dtype != DType::Float16 && dtype != DType::BFloat16;
    case Primitive::Binary:
    case Primitive::Reduce:
    case Primitive::ScatterAdd:
        return is_compute_dtype(dtype);
    case Primitive::Softmax:
        return floating;
    case Primitive::BatchedGemm: // half operands: autocast's products, into float32
        return floating || dtype == DType::Float16 || dtype == DType::BFloat16;
    // Convolution also multiplies in bfloat16 (oneDNN where it has bf16, else float32 on rounded
    // operands) and float16 (float32 kernels on rounded operands): ConvGeometry's flags.
    case Primitive::ConvForward:
    case Primitive::ConvBackwardData:
    case Primitive::ConvBackwardWeights:
        return floating || dtype == DType::Float16 || dtype == DType::BFloat16;
    case Primitive::Matmul: // oneDNN's float32 matmul; float64 products go to batched_gemm
        return dtype == DType::Float32;
    // The rest of the NN table and the training table.
    case Primitive::MaxPool2d:
    case Primitive::AvgPool2d:
    case Primitive::AdaptiveAvgPool2d:
    case Primitive::BatchNorm:
    case Primitive::LayerNorm:
    case Primitive::GroupNorm:
    case Primitive::Recurrent:
    case Primitive::AttentionHeads:
    case Primitive::OptimizerStep:
    case Primitive::ClassLoss:
    case Primitive::ClassScores:
    case Primitive::Dropout:
    case Primitive::GradNorm:
        return floating;
    case Primitive::Count:
        break;
    }
    return false;
}

namespace {

size_t aligned_size(size_t nbytes, size_t alignment) {
    return (nbytes + alignment - 1) & ~(alignment - 1);
}

// Host memory for the caching allocator. Blocks of 2 MiB and more are 2 MiB-aligned and asked to
// be backed by transparent huge pages (as PyTorch's CPU allocator does): one page fault per 2 MiB
// on first touch instead of 512, and fewer TLB misses while a kernel streams through them.
class HostMemory final : public BlockProvider {
  public:
    static constexpr size_t kHugePage = size_t(2) << 20;

    void* allocate(size_t bytes) override {
        const bool huge = bytes >= kHugePage;
        const size_t alignment = huge ? kHugePage : 64;
        // aligned_alloc wants a size that is a multiple of the alignment (C11; glibc tolerates
        // others, AddressSanitizer aborts). The rounded-up tail is never touched, so never
        // resident.
        void* p = std::aligned_alloc(alignment, aligned_size(bytes, alignment));
        // Only the whole huge pages: a partly used tail page would be resident in full.
        if (p && huge) ::madvise(p, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);
        return p;
    }
    void release(void* p, size_t) override { std::free(p); }
};

// A training step allocates the same activation sizes every step; without the cache every one
// of them would come fresh from the OS (measured: ReLU on [128,32,28,28] 3.6 ms with fresh pages,
// as long as the op itself). 256 MiB of unused blocks at most.
CachingAllocator& host_allocator() {
    // Never destroyed: tensors with static storage duration may free their blocks during exit,
    // after function-local statics are gone; the OS reclaims the cached blocks.
    static auto* memory = new HostMemory;
    static auto* allocator = new CachingAllocator(*memory, size_t(256) << 20);
    return *allocator;
}

} // namespace

void* CpuBackend::allocate(size_t nbytes) {
    if (nbytes == 0) return nullptr;
    // Small blocks: plain malloc (16-byte aligned, the cheapest path: per-op overhead matters).
    // Medium ones: 64-byte alignment for full cache lines and aligned AVX-512 loads.
    if (nbytes < CachingAllocator::kMinCachedBytes) {
        void* p =
            nbytes <= 1024 ? std::malloc(nbytes) : std::aligned_alloc(64, aligned_size(nbytes, 64));
        if (!p) throw std::bad_alloc();
        return p;
    }
    void* p = host_allocator().allocate(nbytes);
    if (!p) throw std::bad_alloc();
    return p;
}

void CpuBackend::deallocate(void* p, size_t nbytes) {
    if (nbytes < CachingAllocator::kMinCachedBytes)
        std::free(p);
    else
        host_allocator().deallocate(p, nbytes);
}

MemoryStats CpuBackend::memory_stats() const {
    return host_allocator().stats();
}

void CpuBackend::empty_cache() {
    host_allocator().empty_cache();
}

void CpuBackend::reset_peak_memory_stats() {
    host_allocator().reset_peaks();
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
