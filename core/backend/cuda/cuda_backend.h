#pragma once
// The CUDA backend: the caching allocator over cudaMalloc, cuBLAS for GEMM, own kernels for the
// rest (cuda_kernels.cu, cuda_reduce.cu). One device (cuda:0) per process for now; work goes to
// the default stream. Copies to the device are queued there through pinned staging buffers
// (staging_pool.h: the host goes on at once); copies to the host wait for the work before them,
// or, through copy_to_host_later, are waited for later (pinned slots and an event).
#include "backend/backend.h"
#include "backend/device_allocator.h"
#include "backend/nn_kernels.h"
#include "backend/primitives.h"
#include "backend/staging_pool.h"
#include "backend/train_kernels.h"

#include <myelin/cuda.h>

#include <atomic>
#include <memory>
#include <mutex>

namespace myelin::backend::cuda {

class PinnedReads; // pinned slots for copy_to_host_later (cuda_backend.cpp)

class CudaBackend final : public Backend {
  public:
    explicit CudaBackend(const GpuInfo& gpu);
    ~CudaBackend() override;

    DeviceType type() const override { return DeviceType::CUDA; }
    BackendInfo info() const override;
    bool supports(Primitive p, DType dtype) const override;

    void* allocate(size_t nbytes) override;
    void deallocate(void* p, size_t nbytes) override;
    MemoryStats memory_stats() const override;
    void empty_cache() override;
    void reset_peak_memory_stats() override;
    void copy_from_host(void* dst, const void* src, size_t nbytes) override;
    void copy_to_host(void* dst, const void* src, size_t nbytes) override;
    std::unique_ptr<HostRead> copy_to_host_later(void* dst, const void* src,
                                                 size_t nbytes) override;

    void copy(const View& src, const View& dst) override;
    void fill(const View& dst, double value) override;
    void unary(UnaryOp op, const View& x, const View& out, const OpParams& p) override;
    void binary(BinaryOp op, const View& a, const View& b, const View& out,
                const OpParams& p) override;
    void where(const View& cond, const View& a, const View& b, const View& out) override;
    void reduce(ReduceOp op, const View& x, int reduced_dims, const View& out, const View* indices,
                const OpParams& p) override;
    void softmax(const View& x, int dim, bool log, const View& out) override;
    void softmax_backward(const View& y, const View& grad_y, int dim, bool log,
                          const View& grad_x) override;
    void batched_gemm(const View& a, const View& b, const View& c, bool accumulate) override;
    void index_select(const View& x, int dim, const View& index, const View& out) override;
    void gather(const View& x, int dim, const View& index, const View& out) override;
    void scatter_add(const View& self, int dim, const View& index, const View& src) override;
    bool int_range(const View& x, int64_t* min_out, int64_t* max_out) override;
    // cuda_nn.h: built with cuDNN (MYELIN_CUDNN); nullptr otherwise, and supports() says no.
    NnKernels* nn_kernels() override { return nn_.get(); }
    // cuda_train.h: optimizer steps, class losses, dropout, gradient norms.
    TrainKernels* train_kernels() override { return train_.get(); }

    // TF32 tensor-core math in float32 GEMMs and convolutions: off by default (results as exact
    // as PyTorch's with torch.backends.cuda.matmul.allow_tf32 = False).
    void set_allow_tf32(bool allow) override;
    // Deterministic cuDNN convolution algorithms and an ordered scatter_add (bit-identical
    // reruns; as torch.use_deterministic_algorithms).
    void set_deterministic(bool deterministic) override;

  private:
    GpuInfo gpu_;
    std::unique_ptr<DeviceMemory> memory_;
    std::unique_ptr<DeviceCachingAllocator> allocator_;
    std::unique_ptr<PinnedHost> pinned_;
    std::unique_ptr<StagingPool> staging_;
    std::unique_ptr<PinnedReads> reads_; // after pinned_: its slots go back to it first
    std::unique_ptr<NnKernels> nn_;
    std::unique_ptr<TrainKernels> train_;
    void* cublas_handle();
    std::mutex cublas_mutex_;
    void* cublas_ = nullptr; // cublasHandle_t
    bool allow_tf32_ = false;
    std::atomic<bool> deterministic_{false};
};

} // namespace myelin::backend::cuda
