#pragma once
// One table of primitives per device. The tensor front end (core/tensor) does shape logic,
// broadcasting, type promotion and autograd; a backend only runs kernels over strided views.
// CPU is always registered; CUDA registers itself when built and a device is present.
#include "backend/primitives.h"

#include <myelin/device.h>
#include <myelin/dims.h>
#include <myelin/dtype.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace myelin::backend {

// A strided view handed to kernels: plain data, no ownership. Strides are in elements.
struct View {
    void* data = nullptr;
    DType dtype = DType::Float32;
    int ndim = 0;
    int64_t shape[kMaxDims] = {};
    int64_t strides[kMaxDims] = {};

    int64_t numel() const {
        int64_t n = 1;
        for (int i = 0; i < ndim; ++i)
            n *= shape[i];
        return n;
    }
    bool is_contiguous() const {
        int64_t expected = 1;
        for (int i = ndim - 1; i >= 0; --i) {
            if (shape[i] != 1 && strides[i] != expected) return false;
            expected *= shape[i];
        }
        return true;
    }
};

// A contiguous (row-major) view of `shape` over `data`.
inline View contiguous_view(void* data, DType dtype, const int64_t* shape, int ndim) {
    View v;
    v.data = data;
    v.dtype = dtype;
    v.ndim = ndim;
    int64_t stride = 1;
    for (int d = ndim - 1; d >= 0; --d) {
        v.shape[d] = shape[d];
        v.strides[d] = stride;
        stride *= shape[d];
    }
    return v;
}

// The dtypes element-wise ops and reductions compute in (the front end promotes the others).
inline bool is_compute_dtype(DType t) {
    return t == DType::Float32 || t == DType::Float64 || t == DType::Int64;
}

enum class UnaryOp : uint8_t {
    Neg,
    Abs,
    Sign,
    Reciprocal,
    Square,
    Exp,
    Log,
    Log1p,
    Sqrt,
    Rsqrt,
    Sin,
    Cos,
    Tanh,
    Sigmoid,
    Relu,
    LeakyRelu, // p.a = negative slope
    Elu,       // p.a = alpha
    Gelu,
    GeluTanh,
    Silu,
    Softplus,   // p.a = beta, p.b = threshold
    PowScalar,  // x ^ p.a
    RPowScalar, // p.a ^ x
    AddScalar,  // x + p.a
    MulScalar,  // x * p.a
    DivScalar,  // x / p.a (a true division, as PyTorch divides by a scalar on the CPU)
    RSubScalar, // p.a - x
    RDivScalar, // p.a / x
    Clamp,      // clamp(x, p.a, p.b); +-inf for an absent bound
    IsFinite,   // -> bool
    LogicalNot, // -> bool
    Count
};

enum class BinaryOp : uint8_t {
    Add, // a + p.a * b
    Sub, // a - p.a * b
    Mul,
    Div,
    Pow,
    Maximum,
    Minimum,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge, // -> bool
    // Backward helpers: a = upstream gradient, b = saved input x (or output y where named).
    ReluBackward,      // b = y (or x): g * (b > 0)
    LeakyReluBackward, // p.a = slope; b = x
    EluBackward,       // p.a = alpha; b = x
    GeluBackward,
    GeluTanhBackward,
    SiluBackward,     // b = x
    SoftplusBackward, // p.a = beta, p.b = threshold; b = x
    SigmoidBackward,  // b = y: g * y * (1 - y)
    TanhBackward,     // b = y: g * (1 - y^2)
    Count
};

enum class ReduceOp : uint8_t {
    Sum,
    Mean,
    Max,
    Min,
    ArgMax,
    ArgMin,
    Var,  // p.a = correction
    Norm, // p.a = p (0, 1, 2, other, +inf, -inf)
    LogSumExp,
    Count
};

struct OpParams {
    double a = 0.0;
    double b = 0.0;
};

class NnKernels;    // nn_kernels.h: convolution, pooling, normalisation
class TrainKernels; // train_kernels.h: optimizer steps, class losses, dropout, norms

// A copy to the host under way (Backend::copy_to_host_later). Destroying it without wait()
// still waits for the copy, as its destination may be reused after.
class HostRead {
  public:
    virtual ~HostRead() = default;
    virtual void wait() = 0; // returns when the bytes are at the destination
};

class Backend {
  public:
    virtual ~Backend() = default;
    virtual DeviceType type() const = 0;
    virtual BackendInfo info() const = 0;
    // Whether this backend runs primitive `p` on `dtype` (the compute dtype the front end hands
    // it). By default every entry but the sequence models' (nn_kernels.h), whose NnKernels
    // defaults refuse: a backend that fills them in says so.
    virtual bool supports(Primitive p, DType dtype) const {
        (void)dtype;
        return p != Primitive::Recurrent && p != Primitive::AttentionHeads &&
               p != Primitive::Matmul;
    }
    // Throws DeviceError naming the primitive, the dtype and the device when !supports().
    void require(Primitive p, DType dtype) const;

    virtual void* allocate(size_t nbytes) = 0;
    virtual void deallocate(void* p, size_t nbytes) = 0;
    // The device allocator's bytes in use / reserved and peaks (caching_allocator.h).
    virtual MemoryStats memory_stats() const { return {}; }
    // Returns the allocator's cached, unused blocks to the system.
    virtual void empty_cache() {}
    virtual void reset_peak_memory_stats() {}
    // Copies host memory to/from this device (plain bytes). copy_from_host may return before the
    // device holds the bytes (CUDA queues it behind the work before it, where every later op on
    // dst runs); src may change as soon as it returns. copy_to_host returns with the bytes there.
    virtual void copy_from_host(void* dst, const void* src, size_t nbytes) = 0;
    virtual void copy_to_host(void* dst, const void* src, size_t nbytes) = 0;
    // A copy to the host that the host waits for later: it is queued behind the work before it
    // and the host goes on (queueing more work); the bytes are at dst once the returned read's
    // wait() returns (dst stays valid until then). A training step reads its loss this way, so
    // the device keeps running the backward pass while the host waits for the forward's value.
    // nullptr: the copy is done already (the default: copy_to_host at once).
    virtual std::unique_ptr<HostRead> copy_to_host_later(void* dst, const void* src,
                                                         size_t nbytes) {
        copy_to_host(dst, src, nbytes);
        return nullptr;
    }

    // dst = src (same shape; converts dtype; either may be strided, src may have 0 strides).
    virtual void copy(const View& src, const View& dst) = 0;
    virtual void fill(const View& dst, double value) = 0;
    // out = op(x); x and out have out's shape (x may be broadcast with 0 strides).
    // Compute dtypes: Float32, Float64, Int64 (out is Bool for IsFinite/LogicalNot).
    virtual void unary(UnaryOp op, const View& x, const View& out, const OpParams& p) = 0;
    // out = op(a, b); a, b already broadcast to out's shape; a.dtype == b.dtype (the compute
    // dtype); out has that dtype, or Bool for comparisons.
    virtual void binary(BinaryOp op, const View& a, const View& b, const View& out,
                        const OpParams& p) = 0;
    // out = cond ? a : b; cond is Bool; all broadcast to out's shape; a, b, out same dtype.
    virtual void where(const View& cond, const View& a, const View& b, const View& out) = 0;

    // Reduces the trailing `reduced_dims` dims of x (the front end permutes the reduced dims to
    // the end). out: contiguous, shape = x.shape[0 : x.ndim - reduced_dims]. indices (Int64,
    // same shape as out) is written for ArgMax/ArgMin and, when non-null, for Max/Min; an index
    // is the flat position within the reduced block. NaN propagates like PyTorch.
    virtual void reduce(ReduceOp op, const View& x, int reduced_dims, const View& out,
                        const View* indices, const OpParams& p) = 0;

    // Softmax / log-softmax over dim of a contiguous x (out contiguous, same shape).
    virtual void softmax(const View& x, int dim, bool log, const View& out) = 0;
    // grad_x from y (the forward output) and grad_y; all contiguous.
    virtual void softmax_backward(const View& y, const View& grad_y, int dim, bool log,
                                  const View& grad_x) = 0;

    // Batched GEMM: c[i] = a[i] @ b[i] (+ c[i] when accumulate). a: [B, M, K], b: [B, K, N],
    // c: [B, M, N]; each matrix of a and b has a unit stride in one of its last two dims
    // (row- or column-major) and its vectors lie at least their length apart (no 0 stride
    // inside a matrix, as cuBLAS's leading dimensions require); c is contiguous. Float32 or
    // Float64; also float16 or bfloat16 operands (both the same) with a float32 c: autocast's
    // lowered products.
    virtual void batched_gemm(const View& a, const View& b, const View& c, bool accumulate) = 0;

    // out = x.index_select(dim, index); index: Int64 1-D contiguous, entries validated.
    virtual void index_select(const View& x, int dim, const View& index, const View& out) = 0;
    // out[i][j][k] = x[i][index[i][j][k]][k] (dim = 1); index has out's shape.
    virtual void gather(const View& x, int dim, const View& index, const View& out) = 0;
    // self[i][index[i][j][k]][k] += src[i][j][k] (dim = 1), in place on self.
    virtual void scatter_add(const View& self, int dim, const View& index, const View& src) = 0;
    // Largest and smallest entry of an Int64 view (for index validation); false when empty.
    virtual bool int_range(const View& x, int64_t* min_out, int64_t* max_out) = 0;

    // The device's NN-kernel table; nullptr when it has none (backend::nn_kernels() then
    // refuses the op by name).
    virtual NnKernels* nn_kernels() { return nullptr; }
    // The device's training table (optimizer steps, class losses, dropout, gradient norms);
    // nullptr when it has none (backend::train_kernels() then refuses the op by name).
    virtual TrainKernels* train_kernels() { return nullptr; }

    // Run-wide numerics of the device, set by the trainer from the project before a run:
    // deterministic kernels only (bit-identical reruns: cuDNN's deterministic algorithms, an
    // ordered scatter_add), and TF32 tensor-core math in float32 GEMMs and convolutions. The
    // CPU is always deterministic and has no TF32: no-ops there.
    virtual void set_deterministic(bool deterministic) { (void)deterministic; }
    virtual void set_allow_tf32(bool allow) { (void)allow; }

    // Whether this device's memory is host memory that host code may read and write (the CPU's).
    // No op branches on it: what a device runs is supports() (the sequence entries among them);
    // check_training_backend (devices.cpp) still lets such a device train without a training
    // table of its own.
    virtual bool host_addressable() const { return false; }
};

// The registered backend for a device type; throws DeviceError naming the device when absent.
Backend& get(DeviceType type);
Backend* find(DeviceType type); // nullptr when absent
void register_backend(DeviceType type, Backend* backend);

} // namespace myelin::backend
