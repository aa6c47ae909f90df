// Reductions and softmax of the CUDA backend. Reductions: one block per output element, each
// thread folding a strided share of the reduced block, then a tree in shared memory; sums,
// variances, norms and logsumexp accumulate in double (float32 inputs too), integer sums in
// int64. Softmax: one thread per row of the softmax
// dim, with the CPU's formulas and exp (kernels/elementwise.h).
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_kernels.h"
#include "backend/kernels/elementwise.h"

#include <cmath>
#include <cstring>

namespace myelin::backend::cuda {

namespace {

template <typename T> struct Accumulator { using type = double; };
template <> struct Accumulator<int64_t> { using type = int64_t; };

// Where the outer index o and the reduced index k land in x.
struct ReduceGeometry {
    int outer_ndim = 0;
    int reduced_ndim = 0;
    int64_t outer_shape[kMaxDims] = {};
    int64_t outer_strides[kMaxDims] = {};
    int64_t reduced_shape[kMaxDims] = {};
    int64_t reduced_strides[kMaxDims] = {};
    int64_t rows = 1;
    int64_t reduced = 1;

    __device__ int64_t outer_offset(int64_t o) const {
        int64_t off = 0;
        for (int d = outer_ndim - 1; d >= 0; --d) {
            off += (o % outer_shape[d]) * outer_strides[d];
            o /= outer_shape[d];
        }
        return off;
    }
    __device__ int64_t reduced_offset(int64_t k) const {
        int64_t off = 0;
        for (int d = reduced_ndim - 1; d >= 0; --d) {
            off += (k % reduced_shape[d]) * reduced_strides[d];
            k /= reduced_shape[d];
        }
        return off;
    }
};

template <typename T> __device__ bool is_nan(T v) {
    if constexpr (std::is_same_v<T, int64_t>)
        return false;
    else
        return v != v;
}

// b replaces a when it is the better extreme: NaN wins, then the larger (smaller), then the
// first position on ties.
template <typename T, bool kMax> __device__ bool better(T bv, int64_t bi, T av, int64_t ai) {
    if (is_nan(av)) return is_nan(bv) && bi < ai;
    if (is_nan(bv)) return true;
    if (bv == av) return bi < ai;
    return kMax ? bv > av : bv < av;
}

template <typename T>
__global__ void sum_kernel(ReduceGeometry g, const T* x, T* out, bool mean, void* mean_out,
                           DType mean_type) {
    using Acc = typename Accumulator<T>::type;
    __shared__ Acc partial[kThreads];
    for (int64_t o = blockIdx.x; o < g.rows; o += gridDim.x) {
        const T* base = x + g.outer_offset(o);
        Acc acc = 0;
        for (int64_t k = threadIdx.x; k < g.reduced; k += blockDim.x)
            acc += Acc(base[g.reduced_offset(k)]);
        partial[threadIdx.x] = acc;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s /= 2) {
            if (int(threadIdx.x) < s) partial[threadIdx.x] += partial[threadIdx.x + s];
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            const Acc total = partial[0];
            if (!mean) {
                out[o] = T(total);
            } else if (mean_out) { // an int64 mean written as a floating dtype
                const double v = double(total) / double(g.reduced);
                if (mean_type == DType::Float64)
                    static_cast<double*>(mean_out)[o] = v;
                else
                    static_cast<float*>(mean_out)[o] = float(v);
            } else {
                out[o] = T(total / Acc(g.reduced));
            }
        }
        __syncthreads();
    }
}

template <typename T, bool kMax>
__global__ void extreme_kernel(ReduceGeometry g, const T* x, T* values, int64_t* indices) {
    __shared__ T best_v[kThreads];
    __shared__ int64_t best_i[kThreads];
    for (int64_t o = blockIdx.x; o < g.rows; o += gridDim.x) {
        const T* base = x + g.outer_offset(o);
        T v = T(0);
        int64_t i = -1;
        for (int64_t k = threadIdx.x; k < g.reduced; k += blockDim.x) {
            const T e = base[g.reduced_offset(k)];
            if (i < 0 || better<T, kMax>(e, k, v, i)) {
                v = e;
                i = k;
            }
        }
        best_v[threadIdx.x] = v;
        best_i[threadIdx.x] = i;
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s /= 2) {
            if (int(threadIdx.x) < s) {
                const int64_t oi = best_i[threadIdx.x + s];
                if (oi >= 0 && (best_i[threadIdx.x] < 0 ||
                                better<T, kMax>(best_v[threadIdx.x + s], oi, best_v[threadIdx.x],
                                                best_i[threadIdx.x]))) {
                    best_v[threadIdx.x] = best_v[threadIdx.x + s];
                    best_i[threadIdx.x] = oi;
                }
            }
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            if (values) values[o] = best_v[0];
            if (indices) indices[o] = best_i[0];
        }
        __syncthreads();
    }
}

enum class Combine { Sum, Max, Min };

// NaN wins a max or min, as on the CPU.
__device__ double combine(double a, double b, Combine how) {
    if (how == Combine::Sum) return a + b;
    if (a != a || b != b) return a != a ? a : b;
    return how == Combine::Max ? (a > b ? a : b) : (a < b ? a : b);
}

// Every thread of the block calls it with its partial value; all get the block's result.
__device__ double block_reduce(double v, Combine how, double* shared) {
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (int(threadIdx.x) < s)
            shared[threadIdx.x] = combine(shared[threadIdx.x], shared[threadIdx.x + s], how);
        __syncthreads();
    }
    const double result = shared[0];
    __syncthreads();
    return result;
}

// Var (p = correction), Norm (p = order) and LogSumExp of float rows, in double.
template <typename T>
__global__ void statistic_kernel(ReduceGeometry g, const T* x, T* out, ReduceOp op, double p) {
    __shared__ double shared[kThreads];
    const double inf = __longlong_as_double(0x7ff0000000000000LL);
    for (int64_t o = blockIdx.x; o < g.rows; o += gridDim.x) {
        const T* base = x + g.outer_offset(o);
        const auto load = [&](int64_t k) { return double(base[g.reduced_offset(k)]); };
        const double n = double(g.reduced);
        double result = 0;
        if (op == ReduceOp::Var) {
            double s = 0;
            for (int64_t k = threadIdx.x; k < g.reduced; k += blockDim.x)
                s += load(k);
            const double mean = block_reduce(s, Combine::Sum, shared) / n;
            double q = 0;
            for (int64_t k = threadIdx.x; k < g.reduced; k += blockDim.x) {
                const double d = load(k) - mean;
                q += d * d;
            }
            q = block_reduce(q, Combine::Sum, shared);
            result = q / (n - p > 0 ? n - p : 0.0); // x / 0: inf or NaN, as PyTorch
        } else if (op == ReduceOp::Norm && isinf(p)) {
            double m = p > 0 ? 0.0 : inf;
            for (int64_t k = threadIdx.x; k < g.reduced; k += blockDim.x)
                m = combine(m, fabs(load(k)), p > 0 ? Combine::Max : Combine::Min);
            result = block_reduce(m, p > 0 ? Combine::Max : Combine::Min, shared);
        } else if (op == ReduceOp::Norm) {
            double s = 0;
            for (int64_t k = threadIdx.x; k < g.reduced; k += blockDim.x) {
                const double a = fabs(load(k));
                s += p == 2.0   ? a * a
                     : p == 1.0 ? a
                     : p == 0.0 ? (a != 0.0 ? 1.0 : 0.0)
                                : pow(a, p);
            }
            s = block_reduce(s, Combine::Sum, shared);
            result = p == 2.0 ? sqrt(s) : (p == 0.0 || p == 1.0) ? s : pow(s, 1.0 / p);
        } else { // LogSumExp: m + log(sum(exp(x - m))); all -inf gives -inf, +inf or NaN pass
            double m = -inf;
            for (int64_t k = threadIdx.x; k < g.reduced; k += blockDim.x)
                m = combine(m, load(k), Combine::Max);
            m = block_reduce(m, Combine::Max, shared);
            if (m != m || isinf(m)) {
                result = m;
            } else {
                double s = 0;
                for (int64_t k = threadIdx.x; k < g.reduced; k += blockDim.x)
                    s += exp(load(k) - m);
                result = m + log(block_reduce(s, Combine::Sum, shared));
            }
        }
        if (threadIdx.x == 0) out[o] = T(result);
    }
}

ReduceGeometry reduce_geometry(const View& x, int reduced_dims) {
    ReduceGeometry g;
    g.outer_ndim = x.ndim - reduced_dims;
    g.reduced_ndim = reduced_dims;
    for (int d = 0; d < g.outer_ndim; ++d) {
        g.outer_shape[d] = x.shape[d];
        g.outer_strides[d] = x.strides[d];
        g.rows *= x.shape[d];
    }
    for (int d = 0; d < reduced_dims; ++d) {
        g.reduced_shape[d] = x.shape[g.outer_ndim + d];
        g.reduced_strides[d] = x.strides[g.outer_ndim + d];
        g.reduced *= x.shape[g.outer_ndim + d];
    }
    return g;
}

unsigned reduce_blocks(int64_t rows) {
    return unsigned(rows < 65535 * 16 ? rows : 65535 * 16);
}

template <typename T>
void reduce_typed(ReduceOp op, const ReduceGeometry& g, const View& x, const View& out,
                  const View* indices, const OpParams& p) {
    const T* xp = static_cast<const T*>(x.data);
    const unsigned blocks = reduce_blocks(g.rows);
    switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean: {
        const bool mean = op == ReduceOp::Mean;
        const bool floating_mean = mean && x.dtype == DType::Int64 && out.dtype != DType::Int64;
        sum_kernel<T><<<blocks, kThreads>>>(g, xp,
                                            floating_mean ? nullptr : static_cast<T*>(out.data),
                                            mean, floating_mean ? out.data : nullptr, out.dtype);
        break;
    }
    case ReduceOp::Max:
    case ReduceOp::Min:
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin: {
        const bool is_arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
        T* values = nullptr;
        int64_t* idx = indices ? static_cast<int64_t*>(indices->data) : nullptr;
        if (is_arg && (out.dtype == DType::Int64 || !indices))
            idx = static_cast<int64_t*>(out.data);
        else
            values = static_cast<T*>(out.data);
        const bool is_max = op == ReduceOp::Max || op == ReduceOp::ArgMax;
        if (is_max)
            extreme_kernel<T, true><<<blocks, kThreads>>>(g, xp, values, idx);
        else
            extreme_kernel<T, false><<<blocks, kThreads>>>(g, xp, values, idx);
        check_launch("reduce");
        // argmax into an int64 out with a separate indices view: both get the indices.
        if (is_arg && indices && idx == out.data && indices->data != out.data) {
            const cudaError_t error =
                cudaMemcpy(indices->data, out.data, sizeof(int64_t) * size_t(g.rows),
                           cudaMemcpyDeviceToDevice);
            if (error != cudaSuccess)
                throw DeviceError(std::string("CUDA reduce: ") + cudaGetErrorString(error));
        }
        break;
    }
    case ReduceOp::Var:
    case ReduceOp::Norm:
    case ReduceOp::LogSumExp:
        if constexpr (std::is_same_v<T, int64_t>) {
            throw DTypeError("reduce: var, norm and logsumexp need float32 or float64, got int64");
        } else {
            statistic_kernel<T><<<blocks, kThreads>>>(g, xp, static_cast<T*>(out.data), op, p.a);
        }
        break;
    default:
        break;
    }
    check_launch("reduce");
}

// --- softmax -------------------------------------------------------------------------------------

struct SoftmaxShape {
    int64_t outer = 1, D = 1, inner = 1;
};
SoftmaxShape softmax_shape(const View& x, int dim) {
    SoftmaxShape s;
    for (int d = 0; d < x.ndim; ++d) {
        if (d < dim) s.outer *= x.shape[d];
        if (d > dim) s.inner *= x.shape[d];
    }
    s.D = x.ndim ? x.shape[dim] : 1;
    return s;
}

template <typename T> __global__ void softmax_kernel(SoftmaxShape s, const T* x, T* y, bool log) {
    MYELIN_GRID_LOOP(line, s.outer * s.inner) {
        const int64_t o = line / s.inner, j = line % s.inner;
        const T* xr = x + o * s.D * s.inner + j;
        T* yr = y + o * s.D * s.inner + j;
        T m = xr[0];
        for (int64_t i = 1; i < s.D; ++i) {
            const T v = xr[i * s.inner];
            if (v > m || v != v) m = v;
            if (m != m) break;
        }
        double sum = 0;
        for (int64_t i = 0; i < s.D; ++i) {
            const T e = kernels::fast_exp(T(xr[i * s.inner] - m));
            if (!log) yr[i * s.inner] = e;
            sum += double(e);
        }
        if (log) {
            const T ls = T(::log(sum));
            for (int64_t i = 0; i < s.D; ++i)
                yr[i * s.inner] = (xr[i * s.inner] - m) - ls;
        } else {
            const T inv = T(1.0 / sum);
            for (int64_t i = 0; i < s.D; ++i)
                yr[i * s.inner] *= inv;
        }
    }
}

template <typename T>
__global__ void softmax_backward_kernel(SoftmaxShape s, const T* y, const T* gy, T* gx, bool log) {
    MYELIN_GRID_LOOP(line, s.outer * s.inner) {
        const int64_t base = (line / s.inner) * s.D * s.inner + line % s.inner;
        double acc = 0;
        for (int64_t i = 0; i < s.D; ++i) {
            const int64_t at = base + i * s.inner;
            acc += log ? double(gy[at]) : double(gy[at] * y[at]);
        }
        const T t = T(acc);
        for (int64_t i = 0; i < s.D; ++i) {
            const int64_t at = base + i * s.inner;
            gx[at] = log ? gy[at] - kernels::fast_exp(y[at]) * t : y[at] * (gy[at] - t);
        }
    }
}

} // namespace

bool supports_reduce(ReduceOp op) {
    return op < ReduceOp::Count;
}

void launch_reduce(ReduceOp op, const View& x, int reduced_dims, const View& out,
                   const View* indices, const OpParams& p) {
    const ReduceGeometry g = reduce_geometry(x, reduced_dims);
    if (g.rows == 0) return;
    const bool is_minmax = op == ReduceOp::Max || op == ReduceOp::Min || op == ReduceOp::ArgMax ||
                           op == ReduceOp::ArgMin;
    if (g.reduced == 0 && is_minmax)
        throw IndexError("reduce: cannot reduce over a zero-size dimension");
    if (g.reduced == 0 && op == ReduceOp::Norm && std::isinf(p.a))
        throw IndexError(std::string("norm(): cannot compute the ") + (p.a > 0 ? "inf" : "-inf") +
                         " norm over a zero-size dimension");
    switch (x.dtype) {
    case DType::Float32:
        return reduce_typed<float>(op, g, x, out, indices, p);
    case DType::Float64:
        return reduce_typed<double>(op, g, x, out, indices, p);
    case DType::Int64:
        return reduce_typed<int64_t>(op, g, x, out, indices, p);
    default:
        throw DTypeError(std::string("reduce: unsupported dtype ") + dtype_name(x.dtype) +
                         " on CUDA");
    }
}

void launch_softmax(const View& x, int dim, bool log, const View& out) {
    if (x.dtype != DType::Float32 && x.dtype != DType::Float64)
        throw DTypeError(std::string("softmax: unsupported dtype ") + dtype_name(x.dtype) +
                         " on CUDA");
    const SoftmaxShape s = softmax_shape(x, dim);
    const int64_t lines = s.outer * s.inner;
    if (lines == 0 || s.D == 0) return;
    if (x.dtype == DType::Float32)
        softmax_kernel<float><<<blocks_for(lines), kThreads>>>(s, static_cast<const float*>(x.data),
                                                               static_cast<float*>(out.data), log);
    else
        softmax_kernel<double><<<blocks_for(lines), kThreads>>>(
            s, static_cast<const double*>(x.data), static_cast<double*>(out.data), log);
    check_launch("softmax");
}

void launch_softmax_backward(const View& y, const View& grad_y, int dim, bool log,
                             const View& grad_x) {
    if (y.dtype != DType::Float32 && y.dtype != DType::Float64)
        throw DTypeError(std::string("softmax: unsupported dtype ") + dtype_name(y.dtype) +
                         " on CUDA");
    const SoftmaxShape s = softmax_shape(y, dim);
    const int64_t lines = s.outer * s.inner;
    if (lines == 0 || s.D == 0) return;
    if (y.dtype == DType::Float32)
        softmax_backward_kernel<float><<<blocks_for(lines), kThreads>>>(
            s, static_cast<const float*>(y.data), static_cast<const float*>(grad_y.data),
            static_cast<float*>(grad_x.data), log);
    else
        softmax_backward_kernel<double><<<blocks_for(lines), kThreads>>>(
            s, static_cast<const double*>(y.data), static_cast<const double*>(grad_y.data),
            static_cast<double*>(grad_x.data), log);
    check_launch("softmax_backward");
}

} // namespace myelin::backend::cuda
