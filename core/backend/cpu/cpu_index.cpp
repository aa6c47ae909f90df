// Index kernels: index_select, gather, scatter_add and int_range over strided views.
//
// index_select is gather with an index that is broadcast (0-stride) along every dim but `dim`,
// so both run one loop: out[pos] = x[pos with pos[dim] replaced by index[pos]]. Elements are
// moved as raw bytes of their size, so every dtype works. Indices are validated before anything
// is written (scatter_add works in place and must not leave half an update behind).
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/strided_counter.h"

#include <myelin/error.h>

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace myelin::backend {
namespace {

// A view with size-1 dims dropped and mergeable neighbours coalesced (same element order).
struct Flat {
    int n = 0;
    int64_t shape[kMaxDims] = {};
    int64_t strides[kMaxDims] = {};
};

Flat flatten(const View& v) {
    Flat f;
    for (int d = 0; d < v.ndim; ++d) {
        if (v.shape[d] == 1) continue;
        if (f.n > 0 && f.strides[f.n - 1] == v.strides[d] * v.shape[d]) {
            f.shape[f.n - 1] *= v.shape[d];
            f.strides[f.n - 1] = v.strides[d];
        } else {
            f.shape[f.n] = v.shape[d];
            f.strides[f.n] = v.strides[d];
            ++f.n;
        }
    }
    return f;
}

// Calls fn(value) for every element of an int64 view in row-major order; stops at the first
// call that returns false.
template <typename F> void for_each_int(const View& v, const F& fn) {
    if (v.numel() == 0) return;
    const Flat f = flatten(v);
    const int64_t* p = static_cast<const int64_t*>(v.data);
    if (f.n == 0) {
        fn(p[0]);
        return;
    }
    const int64_t len = f.shape[f.n - 1], st = f.strides[f.n - 1];
    Counter<1> outer{f.n - 1, f.shape, {f.strides}};
    const int64_t rows = v.numel() / len;
    for (int64_t r = 0; r < rows; ++r, outer.next())
        for (int64_t j = 0; j < len; ++j)
            if (!fn(p[outer.off[0] + j * st])) return;
}

std::string shape_str(const View& v) {
    std::string s = "[";
    for (int d = 0; d < v.ndim; ++d) {
        if (d) s += ", ";
        s += std::to_string(v.shape[d]);
    }
    return s + "]";
}

// 0-d views act as 1-d views of one element.
View as_1d_if_scalar(const View& v) {
    if (v.ndim != 0) return v;
    View r = v;
    r.ndim = 1;
    r.shape[0] = 1;
    r.strides[0] = 1;
    return r;
}

void check_dim(const char* op, int dim, int ndim) {
    if (dim < 0 || dim >= ndim)
        throw IndexError(std::string(op) + "(): dim " + std::to_string(dim) +
                         " is out of range for a " + std::to_string(ndim) + "-d tensor");
}

void check_index_dtype(const char* op, const View& index) {
    if (index.dtype != DType::Int64)
        throw DTypeError(std::string(op) + "(): index must be int64, got " +
                         dtype_name(index.dtype));
}

// Smallest and largest entry of an int64 view of any strides; false when empty.
bool int64_range(const View& x, int64_t* min_out, int64_t* max_out) {
    if (x.dtype != DType::Int64)
        throw DTypeError(std::string("int_range(): dtype ") + dtype_name(x.dtype) +
                         " is not supported (expected int64)");
    const int64_t numel = x.numel();
    if (numel == 0) return false;
    const Flat f = flatten(x);
    const auto* p = static_cast<const int64_t*>(x.data);
    const int64_t len = f.n ? f.shape[f.n - 1] : 1;
    const int64_t st = f.n ? f.strides[f.n - 1] : 1;
    const int64_t rows = numel / len;
    int64_t lo = std::numeric_limits<int64_t>::max();
    int64_t hi = std::numeric_limits<int64_t>::min();
    auto scan = [&](int64_t r0, int64_t r1, int64_t& mn, int64_t& mx) {
        Counter<1> c{f.n > 0 ? f.n - 1 : 0, f.shape, {f.strides}};
        c.seek(r0);
        for (int64_t r = r0; r < r1; ++r, c.next()) {
            const int64_t* q = p + c.off[0];
            for (int64_t j = 0; j < len; ++j) {
                const int64_t v = q[j * st];
                mn = v < mn ? v : mn;
                mx = v > mx ? v : mx;
            }
        }
    };
    if (numel < kParallelGrain || rows < 2) {
        scan(0, rows, lo, hi);
    } else {
#pragma omp parallel reduction(min : lo) reduction(max : hi)
        {
            const int t = omp_get_thread_num(), nt = omp_get_num_threads();
            scan(rows * t / nt, rows * (t + 1) / nt, lo, hi);
        }
    }
    *min_out = lo;
    *max_out = hi;
    return true;
}

// Every index must lie in [0, size); the error names the first offending value.
void validate_indices(const char* op, const View& index, int dim, int64_t size) {
    int64_t lo = 0, hi = 0;
    if (!int64_range(index, &lo, &hi) || (lo >= 0 && hi < size)) return;
    int64_t bad = lo < 0 ? lo : hi;
    for_each_int(index, [&](int64_t v) {
        if (v >= 0 && v < size) return true;
        bad = v;
        return false;
    });
    throw IndexError(std::string(op) + "(): index " + std::to_string(bad) +
                     " is out of bounds for dimension " + std::to_string(dim) + " with size " +
                     std::to_string(size));
}

// out[pos] = x[pos with pos[dim] := index[pos]] over out's shape. xs has 0 at dim (the index
// supplies that coordinate, scaled by x_dim_stride); is is the index's strides.
struct GatherPlan {
    int n = 0;
    int64_t shape[kMaxDims] = {};
    int64_t os[kMaxDims] = {}; // out
    int64_t xs[kMaxDims] = {}; // x, with 0 at dim
    int64_t is[kMaxDims] = {}; // index
    int64_t x_dim_stride = 0;
};

template <typename E>
void gather_rows(const GatherPlan& g, const E* x, const int64_t* index, E* out, int64_t r0,
                 int64_t r1) {
    const int last = g.n - 1;
    const int64_t len = g.shape[last];
    const int64_t os = g.os[last], xs = g.xs[last], is = g.is[last];
    Counter<3> c{last, g.shape, {g.os, g.xs, g.is}};
    c.seek(r0);
    for (int64_t r = r0; r < r1; ++r, c.next()) {
        E* o = out + c.off[0];
        const E* xb = x + c.off[1];
        const int64_t* ib = index + c.off[2];
        if (is == 0) { // one index for the whole run: a strided row copy
            const E* src = xb + ib[0] * g.x_dim_stride;
            if (os == 1 && xs == 1)
                std::memcpy(o, src, sizeof(E) * size_t(len));
            else
                for (int64_t j = 0; j < len; ++j)
                    o[j * os] = src[j * xs];
        } else {
            for (int64_t j = 0; j < len; ++j)
                o[j * os] = xb[j * xs + ib[j * is] * g.x_dim_stride];
        }
    }
}

void run_gather(const GatherPlan& g, const View& x, const View& index, const View& out) {
    int64_t numel = 1;
    for (int d = 0; d < g.n; ++d)
        numel *= g.shape[d];
    if (numel == 0) return;
    const int64_t rows = numel / g.shape[g.n - 1];
    const auto* ip = static_cast<const int64_t*>(index.data);
    auto body = [&](int64_t r0, int64_t r1) {
        switch (dtype_size(x.dtype)) {
        case 1:
            return gather_rows(g, static_cast<const uint8_t*>(x.data), ip,
                               static_cast<uint8_t*>(out.data), r0, r1);
        case 2:
            return gather_rows(g, static_cast<const uint16_t*>(x.data), ip,
                               static_cast<uint16_t*>(out.data), r0, r1);
        case 4:
            return gather_rows(g, static_cast<const uint32_t*>(x.data), ip,
                               static_cast<uint32_t*>(out.data), r0, r1);
        default:
            return gather_rows(g, static_cast<const uint64_t*>(x.data), ip,
                               static_cast<uint64_t*>(out.data), r0, r1);
        }
    };
    if (numel < kParallelGrain || rows < 2) {
        body(0, rows);
        return;
    }
#pragma omp parallel
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        body(rows * t / nt, rows * (t + 1) / nt);
    }
}

template <typename T>
void scatter_add_impl(const View& self, int dim, const View& index, const View& src) {
    // Iterate over the index's shape; self's coordinate at dim comes from the index.
    const int n = index.ndim;
    int64_t ss[kMaxDims];
    for (int d = 0; d < n; ++d)
        ss[d] = d == dim ? 0 : self.strides[d];
    T* sp = static_cast<T*>(self.data);
    const T* cp = static_cast<const T*>(src.data);
    const auto* ip = static_cast<const int64_t*>(index.data);
    const int64_t sdim = self.strides[dim];
    const int64_t len = index.shape[n - 1];
    const int64_t rows = index.numel() / len;
    Counter<3> c{n - 1, index.shape, {ss, src.strides, index.strides}};
    for (int64_t r = 0; r < rows; ++r, c.next()) {
        T* s = sp + c.off[0];
        const T* v = cp + c.off[1];
        const int64_t* ib = ip + c.off[2];
        for (int64_t j = 0; j < len; ++j) {
            T& dst = s[j * ss[n - 1] + ib[j * index.strides[n - 1]] * sdim];
            if constexpr (std::is_integral_v<T>) // wraps on overflow instead of being UB
                dst = T(uint64_t(dst) + uint64_t(v[j * src.strides[n - 1]]));
            else
                dst += v[j * src.strides[n - 1]];
        }
    }
}

} // namespace

void CpuBackend::index_select(const View& x_in, int dim, const View& index, const View& out_in) {
    const char* op = "index_select";
    const View x = as_1d_if_scalar(x_in);
    const View out = as_1d_if_scalar(out_in);
    check_dim(op, dim, x.ndim);
    check_index_dtype(op, index);
    if (out.dtype != x.dtype)
        throw DTypeError(std::string(op) + "(): output dtype " + dtype_name(out.dtype) +
                         " does not match the input's " + dtype_name(x.dtype));
    bool ok = index.ndim <= 1 && out.ndim == x.ndim && out.shape[dim] == index.numel();
    for (int d = 0; ok && d < x.ndim; ++d)
        ok = d == dim || out.shape[d] == x.shape[d];
    if (!ok)
        throw ShapeError(std::string(op) + "(): input " + shape_str(x_in) + ", index " +
                         shape_str(index) + " and output " + shape_str(out_in) + " do not agree");
    validate_indices(op, index, dim, x.shape[dim]);

    GatherPlan g;
    g.n = out.ndim;
    for (int d = 0; d < g.n; ++d) {
        g.shape[d] = out.shape[d];
        g.os[d] = out.strides[d];
        g.xs[d] = d == dim ? 0 : x.strides[d];
        g.is[d] = d == dim ? (index.ndim == 1 ? index.strides[0] : 0) : 0;
    }
    g.x_dim_stride = x.strides[dim];
    run_gather(g, x, index, out);
}

void CpuBackend::gather(const View& x_in, int dim, const View& index_in, const View& out_in) {
    const char* op = "gather";
    const View x = as_1d_if_scalar(x_in);
    const View index = as_1d_if_scalar(index_in);
    const View out = as_1d_if_scalar(out_in);
    check_dim(op, dim, x.ndim);
    check_index_dtype(op, index);
    if (out.dtype != x.dtype)
        throw DTypeError(std::string(op) + "(): output dtype " + dtype_name(out.dtype) +
                         " does not match the input's " + dtype_name(x.dtype));
    bool ok = index.ndim == x.ndim && out.ndim == x.ndim;
    for (int d = 0; ok && d < x.ndim; ++d)
        ok = index.shape[d] == out.shape[d] && (d == dim || index.shape[d] <= x.shape[d]);
    if (!ok)
        throw ShapeError(std::string(op) + "(): input " + shape_str(x_in) + ", index " +
                         shape_str(index_in) + " and output " + shape_str(out_in) +
                         " do not agree");
    validate_indices(op, index, dim, x.shape[dim]);

    GatherPlan g;
    g.n = out.ndim;
    for (int d = 0; d < g.n; ++d) {
        g.shape[d] = out.shape[d];
        g.os[d] = out.strides[d];
        g.xs[d] = d == dim ? 0 : x.strides[d];
        g.is[d] = index.strides[d];
    }
    g.x_dim_stride = x.strides[dim];
    run_gather(g, x, index, out);
}

void CpuBackend::scatter_add(const View& self_in, int dim, const View& index_in,
                             const View& src_in) {
    const char* op = "scatter_add";
    const View self = as_1d_if_scalar(self_in);
    const View index = as_1d_if_scalar(index_in);
    const View src = as_1d_if_scalar(src_in);
    check_dim(op, dim, self.ndim);
    check_index_dtype(op, index);
    if (src.dtype != self.dtype)
        throw DTypeError(std::string(op) + "(): source dtype " + dtype_name(src.dtype) +
                         " does not match self's " + dtype_name(self.dtype));
    bool ok = index.ndim == self.ndim && src.ndim == self.ndim;
    for (int d = 0; ok && d < self.ndim; ++d)
        ok = index.shape[d] <= src.shape[d] && (d == dim || index.shape[d] <= self.shape[d]);
    if (!ok)
        throw ShapeError(std::string(op) + "(): self " + shape_str(self_in) + ", index " +
                         shape_str(index_in) + " and source " + shape_str(src_in) +
                         " do not agree");
    const bool arithmetic =
        self.dtype == DType::Float32 || self.dtype == DType::Float64 || self.dtype == DType::Int64;
    if (!arithmetic)
        throw DTypeError(std::string(op) + "(): dtype " + dtype_name(self.dtype) +
                         " is not supported (expected float32, float64 or int64)");
    validate_indices(op, index, dim, self.shape[dim]);
    if (index.numel() == 0) return;
    switch (self.dtype) {
    case DType::Float32:
        return scatter_add_impl<float>(self, dim, index, src);
    case DType::Float64:
        return scatter_add_impl<double>(self, dim, index, src);
    default:
        return scatter_add_impl<int64_t>(self, dim, index, src);
    }
}

bool CpuBackend::int_range(const View& x, int64_t* min_out, int64_t* max_out) {
    return int64_range(x, min_out, max_out);
}

} // namespace myelin::backend
