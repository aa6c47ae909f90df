// CPU reductions: sum, mean, max/min with indices, var, norm, logsumexp. The ops are in
// cpu_reduce_ops.h, the building blocks shared with softmax (cpu_softmax.cpp) in
// cpu_reduce_kernels.h.
//
// reduce() normalises x into kept dims (the output, row-major) and reduced dims, both with
// size-1 dims dropped and mergeable neighbours coalesced, then picks one of two loops:
//   * rows:    each output reduces its block in runs along the innermost reduced dim, with a
//              vectorisable loop when that dim is contiguous (the common "reduce the last dims");
//   * columns: the innermost reduced dim is strided but a kept dim is contiguous (e.g. the bias
//              gradient, a sum over the batch): whole rows are folded into an output-sized
//              accumulator ("lanes") instead of striding down each column.
// Every op is a small class with a mergeable State, so a block can be split across threads and
// the partial results combined in a fixed order (deterministic for a given thread count).
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_reduce_kernels.h"
#include "backend/cpu/cpu_reduce_ops.h"
#include "backend/cpu/strided_counter.h"

#include <myelin/error.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace myelin::backend {
namespace {

const char* reduce_name(ReduceOp op) {
    switch (op) {
    case ReduceOp::Sum:
        return "sum";
    case ReduceOp::Mean:
        return "mean";
    case ReduceOp::Max:
        return "max";
    case ReduceOp::Min:
        return "min";
    case ReduceOp::ArgMax:
        return "argmax";
    case ReduceOp::ArgMin:
        return "argmin";
    case ReduceOp::Var:
        return "var";
    case ReduceOp::Norm:
        return "norm";
    case ReduceOp::LogSumExp:
        return "logsumexp";
    default:
        return "reduce";
    }
}

// ---------------------------------------------------------------------------------------------
// Iteration helpers.

// x split into kept dims (the output, row-major) and reduced dims; size-1 dims dropped and
// neighbours merged where the strides allow it.
struct Layout {
    int nk = 0, nr = 0;
    int64_t ks[kMaxDims] = {}, kst[kMaxDims] = {};
    int64_t rs[kMaxDims] = {}, rst[kMaxDims] = {};
    int64_t K = 1, R = 1; // number of outputs, elements per output
};

// Appends dim (size, stride) to the list, merging it into the previous (outer) dim when the
// pair is equivalent to one dim; flat row-major order is preserved either way.
void push_dim(int& n, int64_t* sh, int64_t* st, int64_t size, int64_t stride) {
    if (size == 1) return;
    if (n > 0 && st[n - 1] == stride * size) {
        sh[n - 1] *= size;
        st[n - 1] = stride;
        return;
    }
    sh[n] = size;
    st[n] = stride;
    ++n;
}

Layout make_layout(const View& x, int reduced_dims, bool reorder_reduced) {
    Layout L;
    const int nkeep = x.ndim - reduced_dims;
    for (int d = 0; d < nkeep; ++d) {
        L.K *= x.shape[d];
        push_dim(L.nk, L.ks, L.kst, x.shape[d], x.strides[d]);
    }
    int order[kMaxDims];
    int nred = 0;
    for (int d = nkeep; d < x.ndim; ++d) {
        L.R *= x.shape[d];
        order[nred++] = d;
    }
    if (reorder_reduced) {
        // When no index is reported the order of the reduced dims is free: put the smallest
        // stride innermost (broadcast 0-stride dims outermost) so runs are as contiguous as
        // possible.
        auto key = [&](int d) {
            const int64_t s = x.strides[d] < 0 ? -x.strides[d] : x.strides[d];
            return s == 0 ? std::numeric_limits<int64_t>::max() : s;
        };
        std::stable_sort(order, order + nred, [&](int a, int b) { return key(a) > key(b); });
    }
    for (int i = 0; i < nred; ++i)
        push_dim(L.nr, L.rs, L.rst, x.shape[order[i]], x.strides[order[i]]);
    return L;
}

// ---------------------------------------------------------------------------------------------
// Drivers.

// Reduces flat positions [lo, hi) (hi > lo) of the block at `base` into one state.
template <typename T, typename Op>
MYELIN_INLINE typename Op::State reduce_span(const Op& op, const Layout& L, const T* base,
                                             int64_t lo, int64_t hi) {
    const int64_t n_in = L.rs[L.nr - 1];
    const int64_t s_in = L.rst[L.nr - 1];
    if (L.nr == 1) return op.segment(base + lo * s_in, hi - lo, s_in, lo);
    Counter<1> outer{L.nr - 1, L.rs, {L.rst}};
    outer.seek(lo / n_in);
    int64_t in = lo % n_in;
    int64_t pos = lo;
    typename Op::State st{};
    bool first = true;
    while (pos < hi) {
        const int64_t len = std::min(n_in - in, hi - pos);
        const auto part = op.segment(base + outer.off[0] + in * s_in, len, s_in, pos);
        if (first)
            st = part;
        else
            op.merge(st, part);
        first = false;
        pos += len;
        in = 0;
        outer.next();
    }
    return st;
}

template <typename Op> struct Partial {
    int64_t k = -1; // output, or -1 for an unused slot
    typename Op::State st{};
};

// Reduces flat (output, position) range [g0, g1): outputs covered whole are stored, the (at most
// two) cut at the ends go to partials[0..1].
template <typename T, typename Op>
MYELIN_CLONES void rows_range(const Op& op, const Layout& L, const T* x, int64_t g0, int64_t g1,
                              Partial<Op>* partials) {
    const int64_t R = L.R;
    Counter<1> kept{L.nk, L.ks, {L.kst}};
    int64_t k = g0 / R;
    kept.seek(k);
    int np = 0;
    while (g0 < g1) {
        const int64_t r0 = g0 - k * R;
        const int64_t r1 = std::min(R, g1 - k * R);
        const auto st = reduce_span(op, L, x + kept.off[0], r0, r1);
        if (r0 == 0 && r1 == R)
            op.store(k, st);
        else
            partials[np++] = {k, st};
        g0 = (k + 1) * R;
        ++k;
        kept.next();
    }
}

// Row loop: threads split the flat (output, position) space evenly; outputs covered by one
// thread are stored directly, split ones are merged afterwards in thread order.
template <typename T, typename Op> void reduce_rows(const Op& op, const Layout& L, const T* x) {
    const int64_t total = L.K * L.R;
    const int nt = static_cast<int>(std::min<int64_t>(thread_count(total), total));
    if (nt <= 1) {
        rows_range<T, Op>(op, L, x, 0, total, nullptr);
        return;
    }
    std::vector<Partial<Op>> parts(2 * static_cast<size_t>(nt));
#pragma omp parallel num_threads(nt)
    {
        const int t = omp_get_thread_num();
        const int n = omp_get_num_threads();
        const int64_t g0 = total / n * t + std::min<int64_t>(t, total % n);
        const int64_t g1 = g0 + total / n + (t < total % n ? 1 : 0);
        rows_range<T, Op>(op, L, x, g0, g1, &parts[2 * size_t(t)]);
    }
    for (size_t i = 0; i < parts.size();) {
        if (parts[i].k < 0) {
            ++i;
            continue;
        }
        auto st = parts[i].st;
        size_t j = i + 1;
        for (; j < parts.size() && (parts[j].k < 0 || parts[j].k == parts[i].k); ++j)
            if (parts[j].k == parts[i].k) op.merge(st, parts[j].st);
        op.store(parts[i].k, st);
        i = j;
    }
}

// Folds reduced rows [r0, r1) (r1 > r0) of n side-by-side outputs at p into lanes.
template <typename T, typename Op>
MYELIN_CLONES void fold_rows(const Op& op, const Layout& L, const T* p, int n, int64_t r0,
                             int64_t r1, typename Op::Lanes& lanes) {
    Counter<1> rows{L.nr, L.rs, {L.rst}};
    rows.seek(r0);
    op.lanes_begin(lanes, p + rows.off[0], n, r0);
    int64_t r = r0 + 1;
    if constexpr (requires(const T* const* q) { op.lanes_step4(lanes, q, n); }) {
        for (; r + 4 <= r1; r += 4) {
            const T* q[4];
            for (int u = 0; u < 4; ++u) {
                rows.next();
                q[u] = p + rows.off[0];
            }
            op.lanes_step4(lanes, q, n);
        }
    }
    for (; r < r1; ++r) {
        rows.next();
        op.lanes_step(lanes, p + rows.off[0], n, r);
    }
}

// Column loop over kept dim `c` (unit stride): tasks are (other kept position, chunk of c).
template <typename T, typename Op>
void reduce_columns(const Op& op, const Layout& L, const T* x, int c) {
    // Output strides of the (simplified, contiguous) kept shape.
    int64_t ost[kMaxDims];
    for (int d = L.nk - 1; d >= 0; --d)
        ost[d] = d == L.nk - 1 ? 1 : ost[d + 1] * L.ks[d + 1];
    // The other kept dims, in order.
    int no = 0;
    int64_t osh[kMaxDims], oxs[kMaxDims], oos[kMaxDims];
    for (int d = 0; d < L.nk; ++d) {
        if (d == c) continue;
        osh[no] = L.ks[d];
        oxs[no] = L.kst[d];
        oos[no] = ost[d];
        ++no;
    }
    const int64_t width = L.ks[c];
    const int64_t chunks = (width + kChunk - 1) / kChunk;
    int64_t n_outer = 1;
    for (int d = 0; d < no; ++d)
        n_outer *= osh[d];
    const int64_t tasks = n_outer * chunks;
    const int64_t R = L.R;
    const int nt = thread_count(L.K * R);

    auto task_origin = [&](int64_t t, int64_t& xoff, int64_t& ooff, int64_t& j0, int& n) {
        Counter<2> o{no, osh, {oxs, oos}};
        o.seek(t / chunks);
        j0 = (t % chunks) * kChunk;
        n = static_cast<int>(std::min<int64_t>(kChunk, width - j0));
        xoff = o.off[0] + j0;
        ooff = o.off[1] + j0 * ost[c];
    };

    auto whole_task = [&](int64_t t) {
        int64_t xoff, ooff, j0;
        int n;
        task_origin(t, xoff, ooff, j0, n);
        typename Op::Lanes lanes;
        fold_rows<T, Op>(op, L, x + xoff, n, 0, R, lanes);
        for (int j = 0; j < n; ++j)
            op.store(ooff + j * ost[c], op.lanes_state(lanes, j));
    };
    // Splitting one task's rows costs a merge buffer and a second pass over the outputs: only
    // worth it for larger inputs (the [128, 256] bias gradient is faster on one thread).
    const bool split_rows = tasks < nt && R >= 2 * nt && L.K * R >= 4 * kParallelGrain;
    if (nt <= 1 || (tasks < 2 && !split_rows)) {
        for (int64_t t = 0; t < tasks; ++t)
            whole_task(t);
        return;
    }
    if (!split_rows) {
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t t = 0; t < tasks; ++t)
            whole_task(t);
        return;
    }
    // Few tasks but many rows: split the rows of each task across threads, merge in order.
    std::vector<typename Op::State> parts(static_cast<size_t>(nt) * kChunk);
    for (int64_t t = 0; t < tasks; ++t) {
        int64_t xoff, ooff, j0;
        int n;
        task_origin(t, xoff, ooff, j0, n);
        int used = nt;
#pragma omp parallel num_threads(nt)
        {
            const int tid = omp_get_thread_num();
            const int nth = omp_get_num_threads();
#pragma omp single
            used = nth;
            const int64_t r0 = R * tid / nth, r1 = R * (tid + 1) / nth;
            typename Op::Lanes lanes;
            fold_rows<T, Op>(op, L, x + xoff, n, r0, r1, lanes);
            for (int j = 0; j < n; ++j)
                parts[size_t(tid) * kChunk + j] = op.lanes_state(lanes, j);
        }
        for (int j = 0; j < n; ++j) {
            auto st = parts[size_t(j)];
            for (int p = 1; p < used; ++p)
                op.merge(st, parts[size_t(p) * kChunk + j]);
            op.store(ooff + j * ost[c], st);
        }
    }
}

template <typename T, typename Op> void run_reduce(const Op& op, const Layout& L, const View& x) {
    if (L.K == 0) return;
    if (L.R == 0) {
        for (int64_t k = 0; k < L.K; ++k)
            op.store(k, Op::empty());
        return;
    }
    const T* data = static_cast<const T*>(x.data);
    if (L.nr == 0) { // every output reduces one element
        Layout one = L;
        one.nr = 1;
        one.rs[0] = 1;
        one.rst[0] = 1;
        reduce_rows(op, one, data);
        return;
    }
    if (L.rst[L.nr - 1] != 1) {
        // Strided innermost reduced dim: fold whole rows when a kept dim is contiguous and
        // wide enough to fill vector lanes.
        for (int c = L.nk - 1; c >= 0; --c) {
            if (L.kst[c] == 1 && L.ks[c] >= 8) {
                reduce_columns(op, L, data, c);
                return;
            }
        }
    }
    reduce_rows(op, L, data);
}

void check_out(const char* name, const View& x, int reduced_dims, const View& out) {
    if (reduced_dims < 0 || reduced_dims > x.ndim)
        throw ShapeError(std::string(name) + "(): cannot reduce " + std::to_string(reduced_dims) +
                         " dims of a " + std::to_string(x.ndim) + "-d tensor");
    bool ok = out.ndim == x.ndim - reduced_dims && out.is_contiguous();
    for (int d = 0; ok && d < out.ndim; ++d)
        ok = out.shape[d] == x.shape[d];
    if (!ok)
        throw ShapeError(std::string(name) +
                         "(): output must be contiguous with the kept dims of the input");
}

// vals / idx: where Max/Min/ArgMax/ArgMin write values and indices (either may be null).
template <typename T>
void reduce_typed(ReduceOp op, const View& x, int reduced_dims, const View& out, void* vals,
                  int64_t* idx, const OpParams& p) {
    const bool is_minmax = op == ReduceOp::Max || op == ReduceOp::Min || op == ReduceOp::ArgMax ||
                           op == ReduceOp::ArgMin;
    // Without an index to report, the order of the reduced dims is free.
    const Layout L = make_layout(x, reduced_dims, !(is_minmax && idx));
    switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Mean: {
        SumOp<T> s;
        s.mean = op == ReduceOp::Mean;
        s.count = L.R;
        s.out = out.data;
        s.out_dtype = out.dtype;
        return run_reduce<T>(s, L, x);
    }
    case ReduceOp::Max:
    case ReduceOp::ArgMax:
        return run_reduce<T>(MinMaxOp<T, true>{vals, idx}, L, x);
    case ReduceOp::Min:
    case ReduceOp::ArgMin:
        return run_reduce<T>(MinMaxOp<T, false>{vals, idx}, L, x);
    default:
        break;
    }
    if constexpr (std::is_floating_point_v<T>) {
        T* o = static_cast<T*>(out.data);
        switch (op) {
        case ReduceOp::Var:
            return run_reduce<T>(VarOp<T>{p.a, o}, L, x);
        case ReduceOp::Norm: {
            NormOp<T> n;
            n.p = p.a;
            n.out = o;
            if (p.a == 2.0)
                n.kind = NormKind::Two;
            else if (p.a == 1.0)
                n.kind = NormKind::One;
            else if (p.a == 0.0)
                n.kind = NormKind::Zero;
            else if (p.a == kInf)
                n.kind = NormKind::Inf;
            else if (p.a == -kInf)
                n.kind = NormKind::NegInf;
            else
                n.kind = NormKind::P;
            return run_reduce<T>(n, L, x);
        }
        case ReduceOp::LogSumExp:
            return run_reduce<T>(LogSumExpOp<T>{o}, L, x);
        default:
            break;
        }
    }
    throw Error(std::string(reduce_name(op)) + "(): unsupported reduce op for dtype " +
                dtype_name(x.dtype));
}

} // namespace

void CpuBackend::reduce(ReduceOp op, const View& x, int reduced_dims, const View& out,
                        const View* indices, const OpParams& p) {
    const char* name = reduce_name(op);
    check_out(name, x, reduced_dims, out);
    const bool is_arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
    const bool is_minmax = is_arg || op == ReduceOp::Max || op == ReduceOp::Min;
    if (indices) {
        if (indices->dtype != DType::Int64)
            throw DTypeError(std::string(name) + "(): indices must be int64, got " +
                             dtype_name(indices->dtype));
        bool ok = indices->ndim == out.ndim && indices->is_contiguous();
        for (int d = 0; ok && d < out.ndim; ++d)
            ok = indices->shape[d] == out.shape[d];
        if (!ok)
            throw ShapeError(std::string(name) +
                             "(): indices must be contiguous with the output's shape");
    }
    const bool int_ok = op == ReduceOp::Sum || op == ReduceOp::Mean || is_minmax;
    const bool dtype_ok = x.dtype == DType::Float32 || x.dtype == DType::Float64 ||
                          (x.dtype == DType::Int64 && int_ok);
    if (!dtype_ok)
        throw_dtype(name, x.dtype,
                    int_ok ? "expected float32, float64 or int64" : "expected float32 or float64");

    // Where results go. ArgMax/ArgMin: an int64 `out` receives the indices (also copied to
    // `indices` when that is a separate view); otherwise `out` receives the values and
    // `indices` (required) the indices. An int64 mean may be written as float32/float64.
    void* vals = nullptr;
    int64_t* idx = indices ? static_cast<int64_t*>(indices->data) : nullptr;
    int64_t* idx_copy = nullptr;
    DType want = x.dtype;
    if (is_arg && (out.dtype == DType::Int64 || !indices)) {
        want = DType::Int64;
        if (idx && idx != out.data) idx_copy = idx;
        idx = static_cast<int64_t*>(out.data);
    } else if (is_minmax) {
        vals = out.data;
    } else if (op == ReduceOp::Mean && x.dtype == DType::Int64 && is_floating(out.dtype)) {
        want = out.dtype == DType::Float64 ? DType::Float64 : DType::Float32;
    }
    if (out.dtype != want)
        throw DTypeError(std::string(name) + "(): output dtype " + dtype_name(out.dtype) +
                         " does not match the expected " + dtype_name(want));

    int64_t R = 1;
    for (int d = x.ndim - reduced_dims; d < x.ndim; ++d)
        R *= x.shape[d];
    if (R == 0) {
        if (is_minmax)
            throw IndexError(std::string(name) + "(): cannot reduce over a zero-size dimension");
        if (op == ReduceOp::Norm && std::isinf(p.a))
            throw IndexError(std::string("norm(): cannot compute the ") +
                             (p.a > 0 ? "inf" : "-inf") + " norm over a zero-size dimension");
    }

    switch (x.dtype) {
    case DType::Float32:
        reduce_typed<float>(op, x, reduced_dims, out, vals, idx, p);
        break;
    case DType::Float64:
        reduce_typed<double>(op, x, reduced_dims, out, vals, idx, p);
        break;
    default:
        reduce_typed<int64_t>(op, x, reduced_dims, out, vals, idx, p);
        break;
    }
    if (idx_copy) std::memcpy(idx_copy, idx, sizeof(int64_t) * size_t(out.numel()));
}

} // namespace myelin::backend
