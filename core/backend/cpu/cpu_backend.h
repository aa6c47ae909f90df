#pragma once
// The CPU backend: OpenBLAS for GEMM, our own vectorised OpenMP loops for element-wise ops and
// reductions; its NN kernels (cpu_nn.h) run oneDNN convolutions and own pooling and
// normalisation loops.
#include "backend/backend.h"

namespace myelin::backend {

class CpuBackend final : public Backend {
  public:
    DeviceType type() const override { return DeviceType::CPU; }
    bool host_addressable() const override { return true; }
    BackendInfo info() const override;
    // The dtypes each entry runs (cpu_backend.cpp).
    bool supports(Primitive p, DType dtype) const override;

    void* allocate(size_t nbytes) override;
    void deallocate(void* p, size_t nbytes) override;
    void copy_from_host(void* dst, const void* src, size_t nbytes) override;
    void copy_to_host(void* dst, const void* src, size_t nbytes) override;
    MemoryStats memory_stats() const override;
    void empty_cache() override;
    void reset_peak_memory_stats() override;

    // cpu_elementwise.cpp
    void copy(const View& src, const View& dst) override;
    void fill(const View& dst, double value) override;
    void unary(UnaryOp op, const View& x, const View& out, const OpParams& p) override;
    void binary(BinaryOp op, const View& a, const View& b, const View& out,
                const OpParams& p) override;
    void where(const View& cond, const View& a, const View& b, const View& out) override;

    // cpu_reduce.cpp
    void reduce(ReduceOp op, const View& x, int reduced_dims, const View& out, const View* indices,
                const OpParams& p) override;

    // cpu_softmax.cpp
    void softmax(const View& x, int dim, bool log, const View& out) override;
    void softmax_backward(const View& y, const View& grad_y, int dim, bool log,
                          const View& grad_x) override;

    // cpu_gemm.cpp
    void batched_gemm(const View& a, const View& b, const View& c, bool accumulate) override;

    // cpu_index.cpp
    void index_select(const View& x, int dim, const View& index, const View& out) override;
    void gather(const View& x, int dim, const View& index, const View& out) override;
    void scatter_add(const View& self, int dim, const View& index, const View& src) override;
    bool int_range(const View& x, int64_t* min_out, int64_t* max_out) override;

    // cpu_nn.h: convolution, pooling, normalisation (cpu_conv.cpp, cpu_pool.cpp, cpu_norm.cpp)
    NnKernels* nn_kernels() override;
    // cpu_train.h: optimizer steps, class losses, dropout, gradient norms (cpu_train*.cpp)
    TrainKernels* train_kernels() override;
};

// Work below this many elements runs on one thread: spawning a team costs more than it saves.
inline constexpr int64_t kParallelGrain = 32768;

} // namespace myelin::backend
