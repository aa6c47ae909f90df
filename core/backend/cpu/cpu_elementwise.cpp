// Element-wise loops: coalesce the operands' dims, then run the innermost dim with unit- or
// zero-stride fast paths the compiler vectorises; OpenMP splits large work across threads.
#include "backend/cpu/cpu_backend.h"
#include "backend/kernels/elementwise.h"

#include <myelin/error.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

namespace myelin::backend {
namespace {

constexpr int kMaxOperands = 4;

// Up to four operands iterated together over one shape (after coalescing).
struct Iter {
    int ndim = 0;
    int nops = 0;
    int64_t shape[kMaxDims] = {};
    int64_t strides[kMaxOperands][kMaxDims] = {};
    char* base[kMaxOperands] = {};
    size_t elem[kMaxOperands] = {};
    int64_t numel = 1;
};

Iter make_iter(std::initializer_list<const View*> views) {
    Iter it;
    const View& first = **views.begin();
    it.nops = static_cast<int>(views.size());
    int op = 0;
    for (const View* v : views) {
        it.base[op] = static_cast<char*>(v->data);
        it.elem[op] = dtype_size(v->dtype);
        ++op;
    }
    // Drop size-1 dims and merge dims that are contiguous across every operand.
    for (int d = 0; d < first.ndim; ++d) {
        const int64_t size = first.shape[d];
        it.numel *= size;
        if (size == 1) continue;
        if (it.ndim > 0) {
            bool mergeable = true;
            int i = 0;
            for (const View* v : views) {
                if (it.strides[i][it.ndim - 1] != v->strides[d] * size) mergeable = false;
                ++i;
            }
            if (mergeable) {
                it.shape[it.ndim - 1] *= size;
                i = 0;
                for (const View* v : views)
                    it.strides[i++][it.ndim - 1] = v->strides[d];
                continue;
            }
        }
        int i = 0;
        for (const View* v : views)
            it.strides[i++][it.ndim] = v->strides[d];
        it.shape[it.ndim++] = size;
    }
    if (it.ndim == 0) { // a single element
        it.ndim = 1;
        it.shape[0] = 1;
        for (int i = 0; i < it.nops; ++i)
            it.strides[i][0] = 0;
    }
    return it;
}

// True when every operand is contiguous with out's (the first view's) shape: one flat run, no
// coalescing needed.
bool is_flat(std::initializer_list<const View*> views) {
    const View& out = **views.begin();
    for (const View* v : views) {
        if (v->ndim != out.ndim || !v->is_contiguous()) return false;
        for (int d = 0; d < out.ndim; ++d)
            if (v->shape[d] != out.shape[d]) return false;
    }
    return true;
}

Iter flat_iter(std::initializer_list<const View*> views) {
    Iter it;
    it.ndim = 1;
    it.numel = (*views.begin())->numel();
    it.shape[0] = it.numel;
    for (const View* v : views) {
        it.base[it.nops] = static_cast<char*>(v->data);
        it.elem[it.nops] = dtype_size(v->dtype);
        it.strides[it.nops][0] = 1;
        ++it.nops;
    }
    return it;
}

// Calls body(ptrs[], inner_strides[], count) for every innermost run in [begin, end) of the
// flattened outer index space; ptrs point at the first element of each run.
template <typename Body>
void for_each_run(const Iter& it, int64_t begin, int64_t end, Body&& body) {
    const int inner = it.ndim - 1;
    const int64_t inner_size = it.shape[inner];
    int64_t inner_strides[kMaxOperands] = {};
    for (int o = 0; o < it.nops; ++o)
        inner_strides[o] = it.strides[o][inner];
    for (int64_t row = begin; row < end; ++row) {
        char* ptrs[kMaxOperands] = {};
        int64_t rem = row;
        for (int o = 0; o < it.nops; ++o)
            ptrs[o] = it.base[o];
        for (int d = inner - 1; d >= 0; --d) {
            const int64_t idx = rem % it.shape[d];
            rem /= it.shape[d];
            for (int o = 0; o < it.nops; ++o)
                ptrs[o] += idx * it.strides[o][d] * static_cast<int64_t>(it.elem[o]);
        }
        body(ptrs, inner_strides, inner_size);
    }
}

// Threads for an element-wise op over `numel` elements: every thread gets at least
// kParallelGrain of them (PyTorch's parallel_for rule), so an op under two grains — the MLP's
// [128, 256] activations — runs on the calling thread without waking the team, whose join costs
// more than the op and, on a busy machine, waits for a descheduled partner.
int threads_for(int64_t numel) {
    if (numel < 2 * kParallelGrain || omp_in_parallel()) return 1;
    return static_cast<int>(std::min<int64_t>(omp_get_max_threads(), numel / kParallelGrain));
}

// Runs body over all runs; in parallel when the work is large. A single long run (the common
// contiguous case) is split into one contiguous share per thread, cut at multiples of 64
// elements so no two threads write the same cache line.
template <typename Body> void run(const Iter& it, Body&& body) {
    if (it.numel == 0) return;
    const int inner = it.ndim - 1;
    const int64_t inner_size = it.shape[inner];
    const int64_t rows = it.numel / inner_size;
    const int nt = threads_for(it.numel);
    if (nt == 1) {
        if (it.ndim == 1) { // one run (contiguous tensors): no index arithmetic at all
            char* ptrs[kMaxOperands] = {};
            int64_t strides[kMaxOperands] = {};
            for (int o = 0; o < it.nops; ++o) {
                ptrs[o] = it.base[o];
                strides[o] = it.strides[o][0];
            }
            body(ptrs, strides, inner_size);
            return;
        }
        for_each_run(it, 0, rows, body);
        return;
    }
    if (rows == 1) {
        constexpr int64_t kAlign = 64;
        const int64_t units = (inner_size + kAlign - 1) / kAlign;
#pragma omp parallel num_threads(nt)
        {
            const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
            const int64_t start = std::min(inner_size, units * t / n * kAlign);
            const int64_t stop = std::min(inner_size, units * (t + 1) / n * kAlign);
            if (stop > start) {
                char* ptrs[kMaxOperands] = {};
                int64_t strides[kMaxOperands] = {};
                for (int o = 0; o < it.nops; ++o) {
                    strides[o] = it.strides[o][inner];
                    ptrs[o] = it.base[o] + start * strides[o] * static_cast<int64_t>(it.elem[o]);
                }
                body(ptrs, strides, stop - start);
            }
        }
        return;
    }
    const int64_t blocks = std::min<int64_t>(rows, 64);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t b = 0; b < blocks; ++b)
        for_each_run(it, b * rows / blocks, (b + 1) * rows / blocks, body);
}

// Runs body over `views` (the output first, then the inputs): for contiguous operands of one
// shape small enough for one thread, directly over the one flat run (no Iter to build: small
// ops' per-call cost, e.g. a 16-element add and its two gradient accumulations, is what the
// PyTorch comparison measures); otherwise through an Iter, flat or coalesced.
template <typename Body> void run_views(std::initializer_list<const View*> views, Body&& body) {
    if (!is_flat(views)) return run(make_iter(views), body);
    const int64_t n = (*views.begin())->numel();
    if (threads_for(n) != 1) return run(flat_iter(views), body);
    if (n == 0) return;
    char* ptrs[kMaxOperands] = {};
    int64_t strides[kMaxOperands] = {};
    int op = 0;
    for (const View* v : views) {
        ptrs[op] = static_cast<char*>(v->data);
        strides[op++] = 1;
    }
    body(ptrs, strides, n);
}

// --- dtype plumbing ----------------------------------------------------------------------------

template <typename F> void dispatch_any(DType t, F&& f) {
    switch (t) {
    case DType::Float32:
        return f(float{});
    case DType::Float64:
        return f(double{});
    case DType::Float16:
        return f(Half{});
    case DType::BFloat16:
        return f(BFloat16{});
    case DType::Int64:
        return f(int64_t{});
    case DType::UInt8:
        return f(uint8_t{});
    case DType::Bool:
        return f(bool{});
    }
}

template <typename D, typename S> inline D convert(S s) {
    if constexpr (std::is_same_v<D, bool>) {
        return static_cast<float>(s) != 0.0f || static_cast<double>(s) != 0.0;
    } else if constexpr (std::is_same_v<D, uint8_t> && !std::is_integral_v<S>) {
        return static_cast<uint8_t>(static_cast<int64_t>(static_cast<double>(s)));
    } else if constexpr (std::is_same_v<D, Half> || std::is_same_v<D, BFloat16>) {
        return D(static_cast<float>(s));
    } else if constexpr (std::is_same_v<S, Half> || std::is_same_v<S, BFloat16>) {
        return static_cast<D>(static_cast<float>(s));
    } else {
        return static_cast<D>(s);
    }
}

[[noreturn]] void unsupported(const char* what, DType t) {
    throw DTypeError(std::string(what) + ": unsupported dtype " + dtype_name(t) + " on CPU");
}

// --- unary / binary loops ------------------------------------------------------------------------

template <UnaryOp OP, typename T>
void unary_loop(const View& x, const View& out, const OpParams& p) {
    run_views({&out, &x}, [&p](char** ptr, const int64_t* st, int64_t n) {
        T* o = reinterpret_cast<T*>(ptr[0]);
        const T* a = reinterpret_cast<const T*>(ptr[1]);
        const auto f = [&p](T v) {
            if constexpr (std::is_same_v<T, int64_t>)
                return kernels::apply_unary_int<OP>(v, p);
            else
                return kernels::apply_unary<OP, T>(v, p);
        };
        if (st[0] == 1 && st[1] == 1) {
#pragma omp simd
            for (int64_t i = 0; i < n; ++i)
                o[i] = f(a[i]);
        } else {
            for (int64_t i = 0; i < n; ++i)
                o[i * st[0]] = f(a[i * st[1]]);
        }
    });
}

template <typename T> void predicate_loop(UnaryOp op, const View& x, const View& out) {
    Iter it = make_iter({&out, &x});
    run(it, [op](char** ptr, const int64_t* st, int64_t n) {
        bool* o = reinterpret_cast<bool*>(ptr[0]);
        const T* a = reinterpret_cast<const T*>(ptr[1]);
        for (int64_t i = 0; i < n; ++i) {
            const T v = a[i * st[1]];
            if (op == UnaryOp::IsFinite) {
                if constexpr (std::is_floating_point_v<T>)
                    o[i * st[0]] = std::isfinite(v);
                else
                    o[i * st[0]] = true;
            } else {
                o[i * st[0]] = !static_cast<bool>(v);
            }
        }
    });
}

template <BinaryOp OP, typename T, typename Out>
void binary_loop(const View& a, const View& b, const View& out, const OpParams& p) {
    run_views({&out, &a, &b}, [&p](char** ptr, const int64_t* st, int64_t n) {
        Out* o = reinterpret_cast<Out*>(ptr[0]);
        const T* x = reinterpret_cast<const T*>(ptr[1]);
        const T* y = reinterpret_cast<const T*>(ptr[2]);
        const auto f = [&p](T u, T v) {
            if constexpr (std::is_same_v<T, int64_t>)
                return static_cast<Out>(kernels::apply_binary_int<OP>(u, v, p));
            else
                return static_cast<Out>(kernels::apply_binary<OP, T>(u, v, p));
        };
        if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
#pragma omp simd
            for (int64_t i = 0; i < n; ++i)
                o[i] = f(x[i], y[i]);
        } else if (st[0] == 1 && st[1] == 1 && st[2] == 0) {
            const T yv = y[0];
#pragma omp simd
            for (int64_t i = 0; i < n; ++i)
                o[i] = f(x[i], yv);
        } else if (st[0] == 1 && st[1] == 0 && st[2] == 1) {
            const T xv = x[0];
#pragma omp simd
            for (int64_t i = 0; i < n; ++i)
                o[i] = f(xv, y[i]);
        } else {
            for (int64_t i = 0; i < n; ++i)
                o[i * st[0]] = f(x[i * st[1]], y[i * st[2]]);
        }
    });
}

constexpr bool is_comparison(BinaryOp op) {
    return op >= BinaryOp::Eq && op <= BinaryOp::Ge;
}

template <BinaryOp OP>
void binary_typed(const View& a, const View& b, const View& out, const OpParams& p) {
    constexpr bool kCompare = is_comparison(OP);
    constexpr bool kIntOk = OP <= BinaryOp::Ge && OP != BinaryOp::Div && OP != BinaryOp::Pow;
    switch (a.dtype) {
    case DType::Float32:
        if constexpr (kCompare)
            return binary_loop<OP, float, bool>(a, b, out, p);
        else
            return binary_loop<OP, float, float>(a, b, out, p);
    case DType::Float64:
        if constexpr (kCompare)
            return binary_loop<OP, double, bool>(a, b, out, p);
        else
            return binary_loop<OP, double, double>(a, b, out, p);
    case DType::Int64:
        if constexpr (kIntOk) {
            if constexpr (kCompare)
                return binary_loop<OP, int64_t, bool>(a, b, out, p);
            else
                return binary_loop<OP, int64_t, int64_t>(a, b, out, p);
        }
        [[fallthrough]];
    default:
        unsupported("binary op", a.dtype);
    }
}

template <UnaryOp OP> void unary_typed(const View& x, const View& out, const OpParams& p) {
    constexpr bool kIntOk = OP == UnaryOp::Neg || OP == UnaryOp::Abs || OP == UnaryOp::Sign ||
                            OP == UnaryOp::Square || OP == UnaryOp::Relu ||
                            OP == UnaryOp::AddScalar || OP == UnaryOp::MulScalar ||
                            OP == UnaryOp::RSubScalar || OP == UnaryOp::Clamp;
    switch (x.dtype) {
    case DType::Float32:
        return unary_loop<OP, float>(x, out, p);
    case DType::Float64:
        return unary_loop<OP, double>(x, out, p);
    case DType::Int64:
        if constexpr (kIntOk) return unary_loop<OP, int64_t>(x, out, p);
        [[fallthrough]];
    default:
        unsupported("unary op", x.dtype);
    }
}

template <size_t kBytes> struct Bytes { unsigned char b[kBytes]; };

template <typename T>
void where_loop(const View& c, const View& a, const View& b, const View& out) {
    Iter it = make_iter({&out, &c, &a, &b});
    run(it, [](char** ptr, const int64_t* st, int64_t n) {
        T* o = reinterpret_cast<T*>(ptr[0]);
        const bool* m = reinterpret_cast<const bool*>(ptr[1]);
        const T* x = reinterpret_cast<const T*>(ptr[2]);
        const T* y = reinterpret_cast<const T*>(ptr[3]);
        for (int64_t i = 0; i < n; ++i)
            o[i * st[0]] = m[i * st[1]] ? x[i * st[2]] : y[i * st[3]];
    });
}

} // namespace

void CpuBackend::copy(const View& src, const View& dst) {
    if (src.dtype == dst.dtype && src.is_contiguous() && dst.is_contiguous()) {
        const size_t bytes = static_cast<size_t>(dst.numel()) * dtype_size(dst.dtype);
        if (bytes > 0) std::memcpy(dst.data, src.data, bytes);
        return;
    }
    dispatch_any(dst.dtype, [&](auto d) {
        using D = decltype(d);
        dispatch_any(src.dtype, [&](auto s) {
            using S = decltype(s);
            Iter it = make_iter({&dst, &src});
            run(it, [](char** ptr, const int64_t* st, int64_t n) {
                D* o = reinterpret_cast<D*>(ptr[0]);
                const S* a = reinterpret_cast<const S*>(ptr[1]);
                if (st[0] == 1 && st[1] == 1) {
                    for (int64_t i = 0; i < n; ++i)
                        o[i] = convert<D>(a[i]);
                } else {
                    for (int64_t i = 0; i < n; ++i)
                        o[i * st[0]] = convert<D>(a[i * st[1]]);
                }
            });
        });
    });
}

void CpuBackend::fill(const View& dst, double value) {
    dispatch_any(dst.dtype, [&](auto d) {
        using D = decltype(d);
        const D v = convert<D>(value);
        Iter it = make_iter({&dst});
        run(it, [v](char** ptr, const int64_t* st, int64_t n) {
            D* o = reinterpret_cast<D*>(ptr[0]);
            if (st[0] == 1) {
                for (int64_t i = 0; i < n; ++i)
                    o[i] = v;
            } else {
                for (int64_t i = 0; i < n; ++i)
                    o[i * st[0]] = v;
            }
        });
    });
}

void CpuBackend::unary(UnaryOp op, const View& x, const View& out, const OpParams& p) {
    using U = UnaryOp;
    if (op == U::IsFinite || op == U::LogicalNot) {
        return dispatch_any(x.dtype, [&](auto v) {
            using T = decltype(v);
            if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
                unsupported("predicate", x.dtype);
            else
                predicate_loop<T>(op, x, out);
        });
    }
#define MYELIN_UNARY_CASE(NAME)                                                                    \
    case U::NAME:                                                                                  \
        return unary_typed<U::NAME>(x, out, p);
    switch (op) {
        MYELIN_UNARY_CASE(Neg)
        MYELIN_UNARY_CASE(Abs)
        MYELIN_UNARY_CASE(Sign)
        MYELIN_UNARY_CASE(Reciprocal)
        MYELIN_UNARY_CASE(Square)
        MYELIN_UNARY_CASE(Exp)
        MYELIN_UNARY_CASE(Log)
        MYELIN_UNARY_CASE(Log1p)
        MYELIN_UNARY_CASE(Sqrt)
        MYELIN_UNARY_CASE(Rsqrt)
        MYELIN_UNARY_CASE(Sin)
        MYELIN_UNARY_CASE(Cos)
        MYELIN_UNARY_CASE(Tanh)
        MYELIN_UNARY_CASE(Sigmoid)
        MYELIN_UNARY_CASE(Relu)
        MYELIN_UNARY_CASE(LeakyRelu)
        MYELIN_UNARY_CASE(Elu)
        MYELIN_UNARY_CASE(Gelu)
        MYELIN_UNARY_CASE(GeluTanh)
        MYELIN_UNARY_CASE(Silu)
        MYELIN_UNARY_CASE(Softplus)
        MYELIN_UNARY_CASE(PowScalar)
        MYELIN_UNARY_CASE(RPowScalar)
        MYELIN_UNARY_CASE(AddScalar)
        MYELIN_UNARY_CASE(MulScalar)
        MYELIN_UNARY_CASE(DivScalar)
        MYELIN_UNARY_CASE(RSubScalar)
        MYELIN_UNARY_CASE(RDivScalar)
        MYELIN_UNARY_CASE(Clamp)
    default:
        throw Error("unary: unknown op");
    }
#undef MYELIN_UNARY_CASE
}

void CpuBackend::binary(BinaryOp op, const View& a, const View& b, const View& out,
                        const OpParams& p) {
    using B = BinaryOp;
#define MYELIN_BINARY_CASE(NAME)                                                                   \
    case B::NAME:                                                                                  \
        return binary_typed<B::NAME>(a, b, out, p);
    switch (op) {
        MYELIN_BINARY_CASE(Add)
        MYELIN_BINARY_CASE(Sub)
        MYELIN_BINARY_CASE(Mul)
        MYELIN_BINARY_CASE(Div)
        MYELIN_BINARY_CASE(Pow)
        MYELIN_BINARY_CASE(Maximum)
        MYELIN_BINARY_CASE(Minimum)
        MYELIN_BINARY_CASE(Eq)
        MYELIN_BINARY_CASE(Ne)
        MYELIN_BINARY_CASE(Lt)
        MYELIN_BINARY_CASE(Le)
        MYELIN_BINARY_CASE(Gt)
        MYELIN_BINARY_CASE(Ge)
        MYELIN_BINARY_CASE(ReluBackward)
        MYELIN_BINARY_CASE(LeakyReluBackward)
        MYELIN_BINARY_CASE(EluBackward)
        MYELIN_BINARY_CASE(GeluBackward)
        MYELIN_BINARY_CASE(GeluTanhBackward)
        MYELIN_BINARY_CASE(SiluBackward)
        MYELIN_BINARY_CASE(SoftplusBackward)
        MYELIN_BINARY_CASE(SigmoidBackward)
        MYELIN_BINARY_CASE(TanhBackward)
    default:
        throw Error("binary: unknown op");
    }
#undef MYELIN_BINARY_CASE
}

void CpuBackend::where(const View& cond, const View& a, const View& b, const View& out) {
    switch (dtype_size(out.dtype)) {
    case 1:
        return where_loop<Bytes<1>>(cond, a, b, out);
    case 2:
        return where_loop<Bytes<2>>(cond, a, b, out);
    case 4:
        return where_loop<Bytes<4>>(cond, a, b, out);
    case 8:
        return where_loop<Bytes<8>>(cond, a, b, out);
    default:
        unsupported("where", out.dtype);
    }
}

} // namespace myelin::backend
