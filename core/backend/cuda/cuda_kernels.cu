// Element-wise, copy, fill, where and index kernels of the CUDA backend. Simple on purpose: one
// thread per element over a grid-stride loop, offsets from the strides (no coalescing passes);
// the element-wise math is kernels/elementwise.h, the same functions the CPU backend runs.
#include "backend/cuda/cuda_common.cuh"
#include "backend/cuda/cuda_kernels.h"
#include "backend/kernels/elementwise.h"

#include <mutex>

namespace myelin::backend::cuda {

namespace {

// --- copy and fill -------------------------------------------------------------------------------

__global__ void copy_kernel(Geometry g, char* dst, DType dst_type, const char* src, DType src_type,
                            int64_t dst_size, int64_t src_size) {
    MYELIN_GRID_LOOP(i, g.numel) {
        char* o = dst + g.offset(0, i) * dst_size;
        const char* s = src + g.offset(1, i) * src_size;
        if (stored_as_int(src_type))
            store_value(o, dst_type, load_int(s, src_type));
        else
            store_value(o, dst_type, load_float(s, src_type));
    }
}

__global__ void fill_kernel(Geometry g, char* dst, DType type, int64_t size, double value) {
    MYELIN_GRID_LOOP(i, g.numel) {
        store_value(dst + g.offset(0, i) * size, type, value);
    }
}

// --- unary and binary ----------------------------------------------------------------------------

template <typename T> __device__ T unary_value(UnaryOp op, T x, const OpParams& p) {
    using U = UnaryOp;
#define MYELIN_UNARY(NAME)                                                                         \
    case U::NAME:                                                                                  \
        if constexpr (std::is_same_v<T, int64_t>)                                                  \
            return kernels::apply_unary_int<U::NAME>(x, p);                                        \
        else                                                                                       \
            return kernels::apply_unary<U::NAME, T>(x, p);
    switch (op) {
        MYELIN_UNARY(Neg)
        MYELIN_UNARY(Abs)
        MYELIN_UNARY(Sign)
        MYELIN_UNARY(Reciprocal)
        MYELIN_UNARY(Square)
        MYELIN_UNARY(Exp)
        MYELIN_UNARY(Log)
        MYELIN_UNARY(Log1p)
        MYELIN_UNARY(Sqrt)
        MYELIN_UNARY(Rsqrt)
        MYELIN_UNARY(Sin)
        MYELIN_UNARY(Cos)
        MYELIN_UNARY(Tanh)
        MYELIN_UNARY(Sigmoid)
        MYELIN_UNARY(Relu)
        MYELIN_UNARY(LeakyRelu)
        MYELIN_UNARY(Elu)
        MYELIN_UNARY(Gelu)
        MYELIN_UNARY(GeluTanh)
        MYELIN_UNARY(Silu)
        MYELIN_UNARY(Softplus)
        MYELIN_UNARY(PowScalar)
        MYELIN_UNARY(RPowScalar)
        MYELIN_UNARY(AddScalar)
        MYELIN_UNARY(MulScalar)
        MYELIN_UNARY(DivScalar)
        MYELIN_UNARY(RSubScalar)
        MYELIN_UNARY(RDivScalar)
        MYELIN_UNARY(Clamp)
    default:
        return x;
    }
#undef MYELIN_UNARY
}

template <typename T>
__global__ void unary_kernel(Geometry g, UnaryOp op, T* out, const T* x, OpParams p) {
    MYELIN_GRID_LOOP(i, g.numel) {
        out[g.offset(0, i)] = unary_value<T>(op, x[g.offset(1, i)], p);
    }
}

__global__ void predicate_kernel(Geometry g, UnaryOp op, bool* out, const char* x, DType type,
                                 int64_t size) {
    MYELIN_GRID_LOOP(i, g.numel) {
        const char* v = x + g.offset(1, i) * size;
        bool r;
        if (op == UnaryOp::IsFinite)
            r = stored_as_int(type) || isfinite(load_float(v, type));
        else
            r = stored_as_int(type) ? load_int(v, type) == 0 : load_float(v, type) == 0.0;
        out[g.offset(0, i)] = r;
    }
}

template <typename T> __device__ T binary_value(BinaryOp op, T a, T b, const OpParams& p) {
    using B = BinaryOp;
#define MYELIN_BINARY(NAME)                                                                        \
    case B::NAME:                                                                                  \
        if constexpr (std::is_same_v<T, int64_t>)                                                  \
            return kernels::apply_binary_int<B::NAME>(a, b, p);                                    \
        else                                                                                       \
            return kernels::apply_binary<B::NAME, T>(a, b, p);
    switch (op) {
        MYELIN_BINARY(Add)
        MYELIN_BINARY(Sub)
        MYELIN_BINARY(Mul)
        MYELIN_BINARY(Div)
        MYELIN_BINARY(Pow)
        MYELIN_BINARY(Maximum)
        MYELIN_BINARY(Minimum)
        MYELIN_BINARY(Eq)
        MYELIN_BINARY(Ne)
        MYELIN_BINARY(Lt)
        MYELIN_BINARY(Le)
        MYELIN_BINARY(Gt)
        MYELIN_BINARY(Ge)
        MYELIN_BINARY(ReluBackward)
        MYELIN_BINARY(LeakyReluBackward)
        MYELIN_BINARY(EluBackward)
        MYELIN_BINARY(GeluBackward)
        MYELIN_BINARY(GeluTanhBackward)
        MYELIN_BINARY(SiluBackward)
        MYELIN_BINARY(SoftplusBackward)
        MYELIN_BINARY(SigmoidBackward)
        MYELIN_BINARY(TanhBackward)
    default:
        return a;
    }
#undef MYELIN_BINARY
}

template <typename T, typename Out>
__global__ void binary_kernel(Geometry g, BinaryOp op, Out* out, const T* a, const T* b,
                              OpParams p) {
    MYELIN_GRID_LOOP(i, g.numel) {
        out[g.offset(0, i)] =
            static_cast<Out>(binary_value<T>(op, a[g.offset(1, i)], b[g.offset(2, i)], p));
    }
}

template <typename T>
__global__ void where_kernel(Geometry g, T* out, const bool* cond, const T* a, const T* b) {
    MYELIN_GRID_LOOP(i, g.numel) {
        out[g.offset(0, i)] = cond[g.offset(1, i)] ? a[g.offset(2, i)] : b[g.offset(3, i)];
    }
}

template <size_t N> struct alignas(N) Bytes { unsigned char b[N]; };

[[noreturn]] void unsupported(const char* what, DType t) {
    throw DTypeError(std::string(what) + ": unsupported dtype " + dtype_name(t) + " on CUDA");
}

constexpr bool is_comparison(BinaryOp op) {
    return op >= BinaryOp::Eq && op <= BinaryOp::Ge;
}
constexpr bool unary_int_ok(UnaryOp op) {
    using U = UnaryOp;
    return op == U::Neg || op == U::Abs || op == U::Sign || op == U::Square || op == U::Relu ||
           op == U::AddScalar || op == U::MulScalar || op == U::RSubScalar || op == U::Clamp;
}
constexpr bool binary_int_ok(BinaryOp op) {
    return op <= BinaryOp::Ge && op != BinaryOp::Div && op != BinaryOp::Pow;
}

template <typename T>
void binary_typed(BinaryOp op, const View& a, const View& b, const View& out, const OpParams& p) {
    const Geometry g = make_geometry({&out, &a, &b});
    if (g.numel == 0) return;
    if (is_comparison(op))
        binary_kernel<T, bool><<<blocks_for(g.numel), kThreads>>>(
            g, op, static_cast<bool*>(out.data), static_cast<const T*>(a.data),
            static_cast<const T*>(b.data), p);
    else
        binary_kernel<T, T><<<blocks_for(g.numel), kThreads>>>(g, op, static_cast<T*>(out.data),
                                                               static_cast<const T*>(a.data),
                                                               static_cast<const T*>(b.data), p);
    check_launch("binary");
}

template <typename T>
void unary_typed(UnaryOp op, const View& x, const View& out, const OpParams& p) {
    const Geometry g = make_geometry({&out, &x});
    if (g.numel == 0) return;
    unary_kernel<T><<<blocks_for(g.numel), kThreads>>>(g, op, static_cast<T*>(out.data),
                                                       static_cast<const T*>(x.data), p);
    check_launch("unary");
}

// --- index ops -----------------------------------------------------------------------------------

// out = x.index_select(dim, index): out's coordinate along dim picks index[coord] of x.
__global__ void index_select_kernel(Geometry g, int dim, char* out, const char* x,
                                    const int64_t* index, int64_t index_stride,
                                    int64_t x_dim_stride, int64_t size) {
    MYELIN_GRID_LOOP(i, g.numel) {
        // Offsets of out and x with x's coordinate along dim taken out; then added back.
        int64_t rest = i, off_out = 0, off_x = 0;
        for (int d = g.ndim - 1; d >= 0; --d) {
            const int64_t coord = rest % g.shape[d];
            rest /= g.shape[d];
            off_out += coord * g.strides[0][d];
            if (d == dim)
                off_x += index[coord * index_stride] * x_dim_stride;
            else
                off_x += coord * g.strides[1][d];
        }
        for (int64_t b = 0; b < size; ++b)
            out[off_out * size + b] = x[off_x * size + b];
    }
}

// gather: out[..j..] = x[.. index[..j..] ..] along dim; index has out's shape.
__global__ void gather_kernel(Geometry g, int dim, char* out, const char* x, const int64_t* index,
                              int64_t x_dim_stride, int64_t size) {
    MYELIN_GRID_LOOP(i, g.numel) {
        int64_t rest = i, off_out = 0, off_x = 0, off_index = 0;
        for (int d = g.ndim - 1; d >= 0; --d) {
            const int64_t coord = rest % g.shape[d];
            rest /= g.shape[d];
            off_out += coord * g.strides[0][d];
            off_index += coord * g.strides[2][d];
            if (d != dim) off_x += coord * g.strides[1][d];
        }
        off_x += index[off_index] * x_dim_stride;
        for (int64_t b = 0; b < size; ++b)
            out[off_out * size + b] = x[off_x * size + b];
    }
}

__device__ void atomic_add(float* p, float v) {
    atomicAdd(p, v);
}
__device__ void atomic_add(double* p, double v) {
    atomicAdd(p, v);
}
__device__ void atomic_add(int64_t* p, int64_t v) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}

// scatter_add: self[.. index[..j..] ..] += src[..j..] along dim; index and src share a shape.
// Atomic adds: the order of additions into one element is not fixed (floating sums may differ
// in the last bits between runs, as PyTorch's CUDA scatter_add).
template <typename T>
__global__ void scatter_add_kernel(Geometry g, int dim, T* self, const T* src, const int64_t* index,
                                   int64_t self_dim_stride) {
    MYELIN_GRID_LOOP(i, g.numel) {
        int64_t rest = i, off_self = 0, off_src = 0, off_index = 0;
        for (int d = g.ndim - 1; d >= 0; --d) {
            const int64_t coord = rest % g.shape[d];
            rest /= g.shape[d];
            off_src += coord * g.strides[1][d];
            off_index += coord * g.strides[2][d];
            if (d != dim) off_self += coord * g.strides[0][d];
        }
        atomic_add(self + off_self + index[off_index] * self_dim_stride, src[off_src]);
    }
}

// The same sums in a fixed order (set_deterministic): one thread per line along dim, adding the
// line's entries in index order, as the CPU's loop does. A line writes only into its own line of
// self (the other coordinates are its own), so no two threads meet and no atomics are needed.
template <typename T>
__global__ void scatter_add_ordered_kernel(Geometry g, int dim, T* self, const T* src,
                                           const int64_t* index, int64_t self_dim_stride,
                                           int64_t lines) {
    MYELIN_GRID_LOOP(line, lines) {
        int64_t rest = line, off_self = 0, off_src = 0, off_index = 0;
        for (int d = g.ndim - 1; d >= 0; --d) {
            if (d == dim) continue;
            const int64_t coord = rest % g.shape[d];
            rest /= g.shape[d];
            off_self += coord * g.strides[0][d];
            off_src += coord * g.strides[1][d];
            off_index += coord * g.strides[2][d];
        }
        for (int64_t j = 0; j < g.shape[dim]; ++j)
            self[off_self + index[off_index + j * g.strides[2][dim]] * self_dim_stride] +=
                src[off_src + j * g.strides[1][dim]];
    }
}

__global__ void int_range_kernel(Geometry g, const int64_t* x, long long* range) {
    MYELIN_GRID_LOOP(i, g.numel) {
        const long long v = x[g.offset(0, i)];
        atomicMin(&range[0], v);
        atomicMax(&range[1], v);
    }
}

} // namespace

void check_last_launch(const char* what) {
    check_launch(what);
}

void launch_copy(const View& src, const View& dst) {
    const Geometry g = make_geometry({&dst, &src});
    if (g.numel == 0) return;
    if (src.dtype == dst.dtype && src.is_contiguous() && dst.is_contiguous()) {
        const cudaError_t error =
            cudaMemcpy(dst.data, src.data, size_t(g.numel) * element_size(dst.dtype),
                       cudaMemcpyDeviceToDevice);
        if (error != cudaSuccess)
            throw DeviceError(std::string("CUDA copy: ") + cudaGetErrorString(error));
        return;
    }
    copy_kernel<<<blocks_for(g.numel), kThreads>>>(
        g, static_cast<char*>(dst.data), dst.dtype, static_cast<const char*>(src.data), src.dtype,
        int64_t(element_size(dst.dtype)), int64_t(element_size(src.dtype)));
    check_launch("copy");
}

void launch_fill(const View& dst, double value) {
    const Geometry g = make_geometry({&dst});
    if (g.numel == 0) return;
    fill_kernel<<<blocks_for(g.numel), kThreads>>>(g, static_cast<char*>(dst.data), dst.dtype,
                                                   int64_t(element_size(dst.dtype)), value);
    check_launch("fill");
}

void launch_unary(UnaryOp op, const View& x, const View& out, const OpParams& p) {
    if (op == UnaryOp::IsFinite || op == UnaryOp::LogicalNot) {
        const Geometry g = make_geometry({&out, &x});
        if (g.numel == 0) return;
        predicate_kernel<<<blocks_for(g.numel), kThreads>>>(
            g, op, static_cast<bool*>(out.data), static_cast<const char*>(x.data), x.dtype,
            int64_t(element_size(x.dtype)));
        return check_launch("unary");
    }
    switch (x.dtype) {
    case DType::Float32:
        return unary_typed<float>(op, x, out, p);
    case DType::Float64:
        return unary_typed<double>(op, x, out, p);
    case DType::Int64:
        if (unary_int_ok(op)) return unary_typed<int64_t>(op, x, out, p);
        [[fallthrough]];
    default:
        unsupported("unary op", x.dtype);
    }
}

void launch_binary(BinaryOp op, const View& a, const View& b, const View& out, const OpParams& p) {
    switch (a.dtype) {
    case DType::Float32:
        return binary_typed<float>(op, a, b, out, p);
    case DType::Float64:
        return binary_typed<double>(op, a, b, out, p);
    case DType::Int64:
        if (binary_int_ok(op)) return binary_typed<int64_t>(op, a, b, out, p);
        [[fallthrough]];
    default:
        unsupported("binary op", a.dtype);
    }
}

void launch_where(const View& cond, const View& a, const View& b, const View& out) {
    const Geometry g = make_geometry({&out, &cond, &a, &b});
    if (g.numel == 0) return;
    const auto run = [&](auto tag) {
        using T = decltype(tag);
        where_kernel<T><<<blocks_for(g.numel), kThreads>>>(
            g, static_cast<T*>(out.data), static_cast<const bool*>(cond.data),
            static_cast<const T*>(a.data), static_cast<const T*>(b.data));
    };
    switch (element_size(out.dtype)) {
    case 1:
        run(Bytes<1>{});
        break;
    case 2:
        run(Bytes<2>{});
        break;
    case 4:
        run(Bytes<4>{});
        break;
    case 8:
        run(Bytes<8>{});
        break;
    default:
        unsupported("where", out.dtype);
    }
    check_launch("where");
}

void launch_index_select(const View& x, int dim, const View& index, const View& out) {
    Geometry g = make_geometry({&out, &x});
    if (g.numel == 0) return;
    index_select_kernel<<<blocks_for(g.numel), kThreads>>>(
        g, dim, static_cast<char*>(out.data), static_cast<const char*>(x.data),
        static_cast<const int64_t*>(index.data), index.ndim ? index.strides[0] : 1, x.strides[dim],
        int64_t(element_size(x.dtype)));
    check_launch("index_select");
}

void launch_gather(const View& x, int dim, const View& index, const View& out) {
    // x's strides with out's shape (x's size along dim differs; its stride there is not used).
    View x_as_out = x;
    for (int d = 0; d < out.ndim; ++d)
        x_as_out.shape[d] = out.shape[d];
    Geometry g = make_geometry({&out, &x_as_out, &index});
    if (g.numel == 0) return;
    gather_kernel<<<blocks_for(g.numel), kThreads>>>(
        g, dim, static_cast<char*>(out.data), static_cast<const char*>(x.data),
        static_cast<const int64_t*>(index.data), x.strides[dim], int64_t(element_size(x.dtype)));
    check_launch("gather");
}

void launch_scatter_add(const View& self, int dim, const View& index, const View& src,
                        bool ordered) {
    // Over the index's shape (src may be larger, as in PyTorch); self's coordinate along dim
    // comes from the index.
    View self_as_index = self, src_as_index = src;
    for (int d = 0; d < index.ndim; ++d)
        self_as_index.shape[d] = src_as_index.shape[d] = index.shape[d];
    Geometry g = make_geometry({&self_as_index, &src_as_index, &index});
    if (g.numel == 0) return;
    const auto run = [&](auto tag) {
        using T = decltype(tag);
        if (ordered && g.ndim > 0) {
            const int64_t lines = g.numel / g.shape[dim];
            scatter_add_ordered_kernel<T><<<blocks_for(lines), kThreads>>>(
                g, dim, static_cast<T*>(self.data), static_cast<const T*>(src.data),
                static_cast<const int64_t*>(index.data), self.strides[dim], lines);
            return;
        }
        scatter_add_kernel<T><<<blocks_for(g.numel), kThreads>>>(
            g, dim, static_cast<T*>(self.data), static_cast<const T*>(src.data),
            static_cast<const int64_t*>(index.data), self.strides[dim]);
    };
    switch (self.dtype) {
    case DType::Float32:
        run(float{});
        break;
    case DType::Float64:
        run(double{});
        break;
    case DType::Int64:
        run(int64_t{});
        break;
    default:
        unsupported("scatter_add", self.dtype);
    }
    check_launch("scatter_add");
}

bool launch_int_range(const View& x, int64_t* min_out, int64_t* max_out) {
    if (x.dtype != DType::Int64) unsupported("int_range", x.dtype); // read as 8-byte values
    const Geometry g = make_geometry({&x});
    if (g.numel == 0) return false;
    // A small device buffer for the two results, kept for the process (guarded: one at a time).
    static std::mutex mutex;
    static long long* range = nullptr;
    std::lock_guard lock(mutex);
    if (!range && cudaMalloc(&range, 2 * sizeof(long long)) != cudaSuccess)
        check_launch("int_range buffer");
    const long long init[2] = {INT64_MAX, INT64_MIN};
    if (const cudaError_t error = cudaMemcpy(range, init, sizeof init, cudaMemcpyHostToDevice);
        error != cudaSuccess)
        throw DeviceError(std::string("CUDA int_range: ") + cudaGetErrorString(error));
    int_range_kernel<<<blocks_for(g.numel), kThreads>>>(g, static_cast<const int64_t*>(x.data),
                                                        range);
    check_launch("int_range");
    long long result[2];
    const cudaError_t error = cudaMemcpy(result, range, sizeof result, cudaMemcpyDeviceToHost);
    if (error != cudaSuccess)
        throw DeviceError(std::string("CUDA int_range: ") + cudaGetErrorString(error));
    *min_out = result[0];
    *max_out = result[1];
    return true;
}

} // namespace myelin::backend::cuda
