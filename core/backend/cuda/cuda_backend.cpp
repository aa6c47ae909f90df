// The CUDA backend's host side: registration, memory (the caching allocator over cudaMalloc),
// copies, cuBLAS GEMM, and what it can run (supports). Kernels are in the .cu files.
#include "backend/cuda/cuda_backend.h"

#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_probe.h"
#include "backend/cuda/cuda_train.h"
#include "backend/gemm_layout.h"
#ifdef MYELIN_CUDNN
#include "backend/cuda/cuda_nn.h"
#endif

#include <myelin/error.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>

namespace myelin::backend::cuda {

namespace {

void check(cudaError_t error, const char* what) {
    if (error != cudaSuccess)
        throw DeviceError(std::string("CUDA ") + what + ": " + cudaGetErrorString(error));
}

void check(cublasStatus_t status, const char* what) {
    if (status != CUBLAS_STATUS_SUCCESS)
        throw DeviceError(std::string("cuBLAS ") + what + ": " + cublasGetStatusString(status));
}

class CudaMemory final : public DeviceMemory {
  public:
    explicit CudaMemory(const GpuInfo& gpu) : gpu_(gpu) {}
    void* allocate(size_t bytes) override {
        void* p = nullptr;
        const cudaError_t error = cudaMalloc(&p, bytes);
        if (error == cudaErrorMemoryAllocation) {
            (void)cudaGetLastError(); // clears the sticky-free error so later calls work
            return nullptr;
        }
        check(error, "cudaMalloc");
        return p;
    }
    void release(void* p, size_t) override { check(cudaFree(p), "cudaFree"); }
    size_t total_memory() const override { return size_t(gpu_.total_memory); }
    std::string device_name() const override { return "cuda:" + std::to_string(gpu_.index); }

  private:
    GpuInfo gpu_;
};

// Page-locked host memory and events for the staging buffers. Releasing never throws: the pool
// is emptied when the backend goes, perhaps while the runtime is shutting down.
class CudaPinnedHost final : public PinnedHost {
  public:
    void* allocate(size_t bytes) override {
        void* p = nullptr;
        if (cudaHostAlloc(&p, bytes, cudaHostAllocDefault) != cudaSuccess) {
            (void)cudaGetLastError(); // refused: the copy goes unstaged
            return nullptr;
        }
        return p;
    }
    void release(void* p) override { (void)cudaFreeHost(p); }
    Event create_event() override {
        cudaEvent_t e = nullptr;
        check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");
        return e;
    }
    void destroy_event(Event e) override { (void)cudaEventDestroy(static_cast<cudaEvent_t>(e)); }
    void record(Event e) override {
        check(cudaEventRecord(static_cast<cudaEvent_t>(e), nullptr), "cudaEventRecord");
    }
    bool finished(Event e) override {
        const cudaError_t state = cudaEventQuery(static_cast<cudaEvent_t>(e));
        if (state == cudaErrorNotReady) return false;
        check(state, "cudaEventQuery");
        return true;
    }
    void synchronize(Event e) override { (void)cudaEventSynchronize(static_cast<cudaEvent_t>(e)); }
};

} // namespace

// Pinned slots for the reads the host waits for later (copy_to_host_later): a cudaMemcpyAsync
// into page-locked memory returns at once (into pageable memory it would wait for the copy), and
// an event recorded behind it says when the bytes are there. Slots are reused; a loss read takes
// one per micro-batch.
class PinnedReads {
  public:
    static constexpr size_t kSlotBytes = 256; // larger reads are copied at once
    struct Slot {
        void* ptr = nullptr;
        PinnedHost::Event event = nullptr;
    };

    explicit PinnedReads(PinnedHost& host) : host_(host) {}
    ~PinnedReads() {
        for (const Slot& slot : free_) {
            host_.destroy_event(slot.event);
            host_.release(slot.ptr);
        }
    }
    PinnedReads(const PinnedReads&) = delete;
    PinnedReads& operator=(const PinnedReads&) = delete;

    // A free slot, or a new one; nullopt when pinned memory is refused.
    std::optional<Slot> take() {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!free_.empty()) {
            const Slot slot = free_.back();
            free_.pop_back();
            return slot;
        }
        Slot slot{host_.allocate(kSlotBytes), nullptr};
        if (!slot.ptr) return std::nullopt;
        try {
            slot.event = host_.create_event();
        } catch (...) {
            host_.release(slot.ptr);
            throw;
        }
        return slot;
    }
    void give_back(const Slot& slot) {
        std::lock_guard<std::mutex> lock(mutex_);
        free_.push_back(slot);
    }

  private:
    PinnedHost& host_;
    std::mutex mutex_;
    std::vector<Slot> free_;
};

namespace {

class CudaHostRead final : public HostRead {
  public:
    CudaHostRead(PinnedReads& pool, PinnedReads::Slot slot, void* dst, size_t bytes)
        : pool_(pool), slot_(slot), dst_(dst), bytes_(bytes) {}
    ~CudaHostRead() override {
        if (done_) return;
        (void)cudaEventSynchronize(static_cast<cudaEvent_t>(slot_.event)); // the slot is reused
        pool_.give_back(slot_);
    }
    void wait() override {
        if (!done_) {
            done_ = true;
            error_ = cudaEventSynchronize(static_cast<cudaEvent_t>(slot_.event));
            if (error_ == cudaSuccess) std::memcpy(dst_, slot_.ptr, bytes_);
            pool_.give_back(slot_);
        }
        check(error_, "copy to host"); // again on every call: dst holds no value
    }

  private:
    PinnedReads& pool_;
    PinnedReads::Slot slot_;
    void* dst_;
    size_t bytes_;
    bool done_ = false;
    cudaError_t error_ = cudaSuccess;
};

// TF32 tensor-core math in cuBLAS's float32 GEMMs, or the exact default.
void set_math_mode(void* cublas, bool allow_tf32) {
    check(cublasSetMathMode(static_cast<cublasHandle_t>(cublas),
                            allow_tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
          "set math mode");
}

} // namespace

CudaBackend::CudaBackend(const GpuInfo& gpu)
    : gpu_(gpu), memory_(std::make_unique<CudaMemory>(gpu)),
      allocator_(std::make_unique<DeviceCachingAllocator>(*memory_)),
      pinned_(std::make_unique<CudaPinnedHost>()),
      staging_(std::make_unique<StagingPool>(*pinned_)),
      reads_(std::make_unique<PinnedReads>(*pinned_)) {
    check(cudaSetDevice(gpu.index), "cudaSetDevice");
#ifdef MYELIN_CUDNN
    nn_ = std::make_unique<CudaNnKernels>(*this);
#endif
    train_ = std::make_unique<CudaTrainKernels>(*this);
}

CudaBackend::~CudaBackend() {
    if (cublas_) cublasDestroy(static_cast<cublasHandle_t>(cublas_));
}

BackendInfo CudaBackend::info() const {
    return {DeviceType::CUDA, "CUDA", "cuda:" + std::to_string(gpu_.index) + " " + gpu_.summary()};
}

bool CudaBackend::supports(Primitive p, DType dtype) const {
    switch (p) {
    case Primitive::Copy:
    case Primitive::Fill:
    case Primitive::Where:
    case Primitive::IndexSelect:
    case Primitive::Gather:
        return true;
    case Primitive::Unary: // predicates read any stored dtype but the half types, as on the CPU
        return dtype != DType::Float16 && dtype != DType::BFloat16;
    case Primitive::Binary:
    case Primitive::Reduce:
    case Primitive::ScatterAdd:
        return is_compute_dtype(dtype);
    case Primitive::Softmax:
        return dtype == DType::Float32 || dtype == DType::Float64;
    case Primitive::BatchedGemm: // half operands: autocast's products, into float32
        return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 ||
               dtype == DType::BFloat16;
    // The NN-kernel table (with cuDNN): float32 and float64; convolutions also float16 products
    // (float16 autocast: cuDNN's half convolutions, ConvGeometry::f16); bfloat16 products not.
    case Primitive::ConvForward:
    case Primitive::ConvBackwardData:
    case Primitive::ConvBackwardWeights:
        return nn_ &&
               (dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16);
    case Primitive::MaxPool2d:
    case Primitive::AvgPool2d:
    case Primitive::AdaptiveAvgPool2d:
    case Primitive::BatchNorm:
    case Primitive::LayerNorm:
    case Primitive::GroupNorm:
        return nn_ && (dtype == DType::Float32 || dtype == DType::Float64);
    // Sequence models (with the NN table: cuda_sequence.cu). linear's float32 products go
    // through batched_gemm (cuBLAS), so there is no separate Matmul entry.
    case Primitive::Recurrent:
    case Primitive::AttentionHeads:
        return nn_ && (dtype == DType::Float32 || dtype == DType::Float64);
    case Primitive::Matmul:
        return false;
    // The training table (cuda_train.cu): float32 and float64.
    case Primitive::OptimizerStep:
    case Primitive::ClassLoss:
    case Primitive::ClassScores:
    case Primitive::Dropout:
    case Primitive::GradNorm:
        return train_ && (dtype == DType::Float32 || dtype == DType::Float64);
    case Primitive::Count:
        break;
    }
    return false;
}

void* CudaBackend::allocate(size_t nbytes) {
    return allocator_->allocate(nbytes);
}
void CudaBackend::deallocate(void* p, size_t) {
    allocator_->deallocate(p);
}
MemoryStats CudaBackend::memory_stats() const {
    return allocator_->stats();
}
void CudaBackend::empty_cache() {
    allocator_->empty_cache();
}
void CudaBackend::reset_peak_memory_stats() {
    allocator_->reset_peaks();
}

// Staged: queued on the default stream behind the work before it, which is where everything
// that reads dst runs (NCCL's stream waits for it first); the host goes on at once.
void CudaBackend::copy_from_host(void* dst, const void* src, size_t nbytes) {
    if (!nbytes) return;
    const bool staged = staging_->stage(src, nbytes, [&](const void* pinned) {
        check(cudaMemcpyAsync(dst, pinned, nbytes, cudaMemcpyHostToDevice, nullptr),
              "copy to device");
    });
    if (!staged) check(cudaMemcpy(dst, src, nbytes, cudaMemcpyHostToDevice), "copy to device");
}
void CudaBackend::copy_to_host(void* dst, const void* src, size_t nbytes) {
    if (nbytes) check(cudaMemcpy(dst, src, nbytes, cudaMemcpyDeviceToHost), "copy to host");
}

// Into a pinned slot on the default stream, behind the work that computes src; the host waits
// in wait(), for this copy and what is before it only. Without a slot the copy is done now.
std::unique_ptr<HostRead> CudaBackend::copy_to_host_later(void* dst, const void* src,
                                                          size_t nbytes) {
    std::optional<PinnedReads::Slot> slot;
    if (nbytes && nbytes <= PinnedReads::kSlotBytes) slot = reads_->take();
    if (!slot) {
        copy_to_host(dst, src, nbytes);
        return nullptr;
    }
    // Owned by the read from here: if queueing fails, its destructor returns the slot.
    auto read = std::make_unique<CudaHostRead>(*reads_, *slot, dst, nbytes);
    check(cudaMemcpyAsync(slot->ptr, src, nbytes, cudaMemcpyDeviceToHost, nullptr), "copy to host");
    try {
        pinned_->record(slot->event);
    } catch (...) {
        // No event behind the copy: wait for it here, so the slot goes back idle.
        (void)cudaStreamSynchronize(nullptr);
        throw;
    }
    return read;
}

void CudaBackend::copy(const View& src, const View& dst) {
    launch_copy(src, dst);
}
void CudaBackend::fill(const View& dst, double value) {
    launch_fill(dst, value);
}
void CudaBackend::unary(UnaryOp op, const View& x, const View& out, const OpParams& p) {
    require(Primitive::Unary, x.dtype);
    launch_unary(op, x, out, p);
}
void CudaBackend::binary(BinaryOp op, const View& a, const View& b, const View& out,
                         const OpParams& p) {
    require(Primitive::Binary, a.dtype);
    launch_binary(op, a, b, out, p);
}
void CudaBackend::where(const View& cond, const View& a, const View& b, const View& out) {
    launch_where(cond, a, b, out);
}

void CudaBackend::reduce(ReduceOp op, const View& x, int reduced_dims, const View& out,
                         const View* indices, const OpParams& p) {
    require(Primitive::Reduce, x.dtype);
    if (!supports_reduce(op)) {
        static constexpr const char* kNames[] = {"sum",    "mean", "max",  "min",      "argmax",
                                                 "argmin", "var",  "norm", "logsumexp"};
        throw DeviceError(std::string("reduce ") + kNames[int(op)] + " on " + dtype_name(x.dtype) +
                          " is not supported by the CUDA backend (cuda:" +
                          std::to_string(gpu_.index) + ") in this version");
    }
    launch_reduce(op, x, reduced_dims, out, indices, p);
}

void CudaBackend::softmax(const View& x, int dim, bool log, const View& out) {
    require(Primitive::Softmax, x.dtype);
    launch_softmax(x, dim, log, out);
}
void CudaBackend::softmax_backward(const View& y, const View& grad_y, int dim, bool log,
                                   const View& grad_x) {
    require(Primitive::Softmax, y.dtype);
    launch_softmax_backward(y, grad_y, dim, log, grad_x);
}

void CudaBackend::set_deterministic(bool deterministic) {
    deterministic_ = deterministic;
#ifdef MYELIN_CUDNN
    static_cast<CudaNnKernels&>(*nn_).set_deterministic(deterministic);
#else
#endif
}

void CudaBackend::set_allow_tf32(bool allow) {
#ifdef MYELIN_CUDNN
    static_cast<CudaNnKernels&>(*nn_).set_allow_tf32(allow);
#endif
    std::lock_guard<std::mutex> lock(cublas_mutex_);
    allow_tf32_ = allow;
    if (cublas_) set_math_mode(cublas_, allow);
}

// Created on the first GEMM (not at start-up: a process that never multiplies on the GPU does
// not pay cuBLAS's initialisation), once even when two threads get there together.
void* CudaBackend::cublas_handle() {
    std::lock_guard<std::mutex> lock(cublas_mutex_);
    if (!cublas_) {
        cublasHandle_t handle = nullptr;
        check(cublasCreate(&handle), "create");
        cublas_ = handle;
        set_math_mode(handle, allow_tf32_);
    }
    return cublas_;
}

namespace {
// One operand of a row-major product as cuBLAS (column-major) sees it: a row-major [R, C]
// matrix is its transpose in column-major order, so it goes in untransposed, and a
// column-major one goes in transposed. ld: the stride between the stored vectors, at least
// their length.
struct GemmOperand {
    cublasOperation_t op;
    int ld;
};
GemmOperand gemm_operand(const View& m) {
    const int64_t rows = m.shape[1], cols = m.shape[2];
    // The front end copies what does not fit (gemm_ready); a leading dimension shorter than its
    // vectors would read the wrong memory.
    switch (gemm_layout(rows, cols, m.strides[1], m.strides[2])) {
    case GemmLayout::RowMajor:
        return {CUBLAS_OP_N, int(std::max<int64_t>({m.strides[1], cols, 1}))};
    case GemmLayout::ColumnMajor:
        return {CUBLAS_OP_T, int(std::max<int64_t>({m.strides[2], rows, 1}))};
    case GemmLayout::Neither:
        break;
    }
    throw DeviceError("batched_gemm on CUDA: an operand of strides (" +
                      std::to_string(m.strides[1]) + ", " + std::to_string(m.strides[2]) +
                      ") is neither row- nor column-major");
}
} // namespace

void CudaBackend::batched_gemm(const View& a, const View& b, const View& c, bool accumulate) {
    require(Primitive::BatchedGemm, a.dtype);
    const int64_t batch = c.shape[0], m = c.shape[1], n = c.shape[2], k = a.shape[2];
    if (batch == 0 || m == 0 || n == 0) return;
    for (int64_t v : {batch, m, n, k, a.strides[0], a.strides[1], a.strides[2], b.strides[0],
                      b.strides[1], b.strides[2]})
        if (v > INT_MAX)
            throw DeviceError("batched_gemm on CUDA: a size or stride beyond 2^31 - 1");
    if (k == 0) {
        if (!accumulate) launch_fill(c, 0.0);
        return;
    }
    auto* handle = static_cast<cublasHandle_t>(cublas_handle());
    // Row-major c = a @ b is column-major c^T = b^T @ a^T: b first, then a.
    const GemmOperand ob = gemm_operand(b), oa = gemm_operand(a);
    const long long stride_a = a.strides[0], stride_b = b.strides[0], stride_c = m * n;
    if (a.dtype == DType::Float16 || a.dtype == DType::BFloat16) {
        // Autocast's lowered product: half operands on the tensor cores, accumulated and
        // written in float32 (as PyTorch's autocast GEMMs accumulate).
        if (b.dtype != a.dtype || c.dtype != DType::Float32)
            throw DTypeError(std::string("batched_gemm on CUDA: ") + dtype_name(a.dtype) +
                             " operands need a float32 output and operands of one dtype");
        const cudaDataType half = a.dtype == DType::Float16 ? CUDA_R_16F : CUDA_R_16BF;
        const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
        check(cublasGemmStridedBatchedEx(handle, ob.op, oa.op, int(n), int(m), int(k), &alpha,
                                         b.data, half, ob.ld, stride_b, a.data, half, oa.ld,
                                         stride_a, &beta, c.data, CUDA_R_32F, int(n), stride_c,
                                         int(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
              "gemm (half operands)");
    } else if (a.dtype == DType::Float32) {
        const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
        check(cublasSgemmStridedBatched(handle, ob.op, oa.op, int(n), int(m), int(k), &alpha,
                                        static_cast<const float*>(b.data), ob.ld, stride_b,
                                        static_cast<const float*>(a.data), oa.ld, stride_a, &beta,
                                        static_cast<float*>(c.data), int(n), stride_c, int(batch)),
              "sgemm");
    } else {
        const double alpha = 1.0, beta = accumulate ? 1.0 : 0.0;
        check(cublasDgemmStridedBatched(handle, ob.op, oa.op, int(n), int(m), int(k), &alpha,
                                        static_cast<const double*>(b.data), ob.ld, stride_b,
                                        static_cast<const double*>(a.data), oa.ld, stride_a, &beta,
                                        static_cast<double*>(c.data), int(n), stride_c, int(batch)),
              "dgemm");
    }
}

void CudaBackend::index_select(const View& x, int dim, const View& index, const View& out) {
    launch_index_select(x, dim, index, out);
}
void CudaBackend::gather(const View& x, int dim, const View& index, const View& out) {
    launch_gather(x, dim, index, out);
}
void CudaBackend::scatter_add(const View& self, int dim, const View& index, const View& src) {
    require(Primitive::ScatterAdd, self.dtype);
    launch_scatter_add(self, dim, index, src, deterministic_);
}
bool CudaBackend::int_range(const View& x, int64_t* min_out, int64_t* max_out) {
    return launch_int_range(x, min_out, max_out);
}

void ensure_registered() {
    static const bool registered = [] {
        const CudaStatus& status = cuda_status();
        if (!status.usable()) return false;
        // Never destroyed, as the CPU backend: static tensors free through it at exit.
        static auto* backend = new CudaBackend(status.devices.front());
        register_backend(DeviceType::CUDA, backend);
        return true;
    }();
    (void)registered;
}

} // namespace myelin::backend::cuda

// The module's entry points (backend/cuda/cuda_probe.h), found by the core's loader with dlsym.
extern "C" void myelin_cuda_module_probe(myelin::CudaStatus* out) {
    *out = myelin::backend::cuda::probe();
}

extern "C" void myelin_cuda_module_register() {
    myelin::backend::cuda::ensure_registered();
}
