// Self-test of the CPU reduce / softmax / gemm / index kernels against naive reference loops in
// long double, on small hand-made views: contiguous, permuted, padded, broadcast (0-stride) and
// size-1 dims with arbitrary strides. Prints "N passed, M failed"; exits nonzero on failure.
//
// Standalone build from the repository root (no core library needed; the macro supplies the
// few symbols defined elsewhere in the core), as one command line:
//   g++ -std=c++20 -O2 -Wall -Wextra -Werror -fopenmp -DMYELIN_KERNEL_SELFTEST_STANDALONE
//       -I core -I core/include -I/usr/include/x86_64-linux-gnu/openblas-openmp
//       core/backend/cpu/kernel_selftest.cpp core/backend/cpu/cpu_reduce.cpp
//       core/backend/cpu/cpu_gemm.cpp core/backend/cpu/cpu_index.cpp
//       -L/usr/lib/x86_64-linux-gnu/openblas-openmp -lopenblas -o kernel_selftest
// Linked against the core library instead, leave the macro undefined.
#include "backend/cpu/cpu_backend.h"

#include <myelin/error.h>

#include <omp.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace myelin;
using namespace myelin::backend;
using ld = long double;

#ifdef MYELIN_KERNEL_SELFTEST_STANDALONE
namespace myelin {
const char* dtype_name(DType t) {
    switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Int64: return "int64";
    case DType::UInt8: return "uint8";
    case DType::Bool: return "bool";
    }
    return "?";
}
size_t dtype_size(DType t) {
    switch (t) {
    case DType::Float32: return 4;
    case DType::Float64:
    case DType::Int64: return 8;
    case DType::Float16:
    case DType::BFloat16: return 2;
    default: return 1;
    }
}
namespace backend {
// The members implemented in other files of the core; never called here.
BackendInfo CpuBackend::info() const { return {DeviceType::CPU, "CPU", ""}; }
void* CpuBackend::allocate(size_t) { return nullptr; }
void CpuBackend::deallocate(void*, size_t) {}
void CpuBackend::copy_from_host(void*, const void*, size_t) {}
void CpuBackend::copy_to_host(void*, const void*, size_t) {}
void CpuBackend::copy(const View&, const View&) {}
void CpuBackend::fill(const View&, double) {}
void CpuBackend::unary(UnaryOp, const View&, const View&, const OpParams&) {}
void CpuBackend::binary(BinaryOp, const View&, const View&, const View&, const OpParams&) {}
void CpuBackend::where(const View&, const View&, const View&, const View&) {}
} // namespace backend
} // namespace myelin
#endif

namespace {

int g_passed = 0, g_failed = 0;
std::mt19937_64 g_rng(20240611);

void check(bool ok, const std::string& what) {
    if (ok) {
        ++g_passed;
    } else {
        ++g_failed;
        if (g_failed <= 40) std::printf("FAIL: %s\n", what.c_str());
    }
}

template <typename E> void expect_throw(const std::function<void()>& fn, const std::string& what,
                                        const std::string& needle) {
    try {
        fn();
        check(false, what + ": no exception");
    } catch (const E& e) {
        check(std::string(e.what()).find(needle) != std::string::npos,
              what + ": message '" + e.what() + "' lacks '" + needle + "'");
    } catch (const std::exception& e) {
        check(false, what + ": wrong exception type: " + e.what());
    }
}

int64_t rand_int(int64_t lo, int64_t hi) { // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(g_rng);
}
double rand_normal() { return std::normal_distribution<double>(0.0, 1.0)(g_rng); }

std::string shape_str(const View& v) {
    std::string s = "[";
    for (int d = 0; d < v.ndim; ++d)
        s += (d ? "," : "") + std::to_string(v.shape[d]) + "/" + std::to_string(v.strides[d]);
    return s + "]";
}

// ----- test tensors ---------------------------------------------------------------------------

enum class Kind { Contig, Permuted, Padded, Broadcast, Count };

// Owns storage and a view into it with the requested layout.
struct Buf {
    std::vector<uint64_t> storage; // 8-byte aligned bytes
    View v;

    void* at(int64_t off) const {
        return const_cast<char*>(reinterpret_cast<const char*>(v.data)) +
               off * int64_t(dtype_size(v.dtype));
    }
    double get(int64_t off) const {
        const void* p = at(off);
        switch (v.dtype) {
        case DType::Float32: return *static_cast<const float*>(p);
        case DType::Float64: return *static_cast<const double*>(p);
        case DType::Int64: return double(*static_cast<const int64_t*>(p));
        default: return double(*static_cast<const uint8_t*>(p));
        }
    }
    void set(int64_t off, double x) const {
        void* p = at(off);
        switch (v.dtype) {
        case DType::Float32: *static_cast<float*>(p) = float(x); break;
        case DType::Float64: *static_cast<double*>(p) = x; break;
        case DType::Int64: *static_cast<int64_t*>(p) = int64_t(x); break;
        default: *static_cast<uint8_t*>(p) = uint8_t(x); break;
        }
    }
    int64_t offset(const int64_t* idx) const {
        int64_t o = 0;
        for (int d = 0; d < v.ndim; ++d) o += idx[d] * v.strides[d];
        return o;
    }
    // Every element position in row-major order.
    std::vector<int64_t> offsets() const {
        std::vector<int64_t> out;
        const int64_t n = v.numel();
        int64_t idx[kMaxDims] = {};
        for (int64_t i = 0; i < n; ++i) {
            out.push_back(offset(idx));
            for (int d = v.ndim - 1; d >= 0; --d) {
                if (++idx[d] < v.shape[d]) break;
                idx[d] = 0;
            }
        }
        return out;
    }
};

Buf make_buf(DType dt, const std::vector<int64_t>& shape, Kind kind, bool odd_unit_strides = true) {
    Buf b;
    b.v.dtype = dt;
    b.v.ndim = int(shape.size());
    const int n = b.v.ndim;
    std::vector<int> order(n); // memory order, innermost first
    for (int i = 0; i < n; ++i) order[i] = n - 1 - i;
    if (kind == Kind::Permuted) std::shuffle(order.begin(), order.end(), g_rng);
    int64_t run = 1;
    for (int i = 0; i < n; ++i) {
        const int d = order[i];
        b.v.shape[d] = shape[d];
        if (kind == Kind::Broadcast && rand_int(0, 2) == 0) {
            b.v.strides[d] = 0;
            continue;
        }
        const int64_t step = kind == Kind::Padded ? rand_int(1, 3) : 1;
        b.v.strides[d] = run * step;
        run *= std::max<int64_t>(1, shape[d]) * step + (kind == Kind::Padded ? rand_int(0, 2) : 0);
    }
    // A size-1 dim never moves the pointer; give it a stride nobody should rely on.
    for (int d = 0; odd_unit_strides && d < n; ++d)
        if (shape[d] == 1 && rand_int(0, 1)) b.v.strides[d] = rand_int(0, 1) ? 0 : 977;
    int64_t extent = 1;
    for (int d = 0; d < n; ++d)
        if (shape[d] > 0) extent += (shape[d] - 1) * b.v.strides[d];
    b.storage.assign(size_t((extent * int64_t(dtype_size(dt)) + 7) / 8 + 1), 0);
    b.v.data = b.storage.data();
    return b;
}

// Plain row-major strides (element i at flat position i).
Buf make_contig(DType dt, const std::vector<int64_t>& shape) {
    return make_buf(dt, shape, Kind::Contig, false);
}

// Fills every element (shared positions of broadcast dims get one value).
void fill_random(Buf& b, int mode) {
    for (int64_t off : b.offsets()) {
        double x = rand_normal() * 3.0;
        if (mode == 1) x = double(rand_int(-2, 2)); // ties
        if (b.v.dtype == DType::Int64) x = double(rand_int(-50, 50));
        b.set(off, x);
    }
}

std::vector<int64_t> rand_shape(int ndim, int64_t max_size) {
    std::vector<int64_t> s(ndim);
    for (auto& x : s) x = rand_int(1, max_size);
    if (ndim && rand_int(0, 9) == 0) s[size_t(rand_int(0, ndim - 1))] = 1;
    return s;
}

// ----- reduce ---------------------------------------------------------------------------------

const char* op_str(ReduceOp op) {
    static const char* names[] = {"sum", "mean", "max", "min", "argmax",
                                  "argmin", "var", "norm", "logsumexp"};
    return names[int(op)];
}

struct RefResult {
    ld value = 0;
    int64_t index = 0;
    ld scale = 0; // magnitude of the terms, for the tolerance
};

RefResult ref_reduce(ReduceOp op, const std::vector<double>& xs, double pa, bool is_int) {
    RefResult r;
    const int64_t n = int64_t(xs.size());
    auto extreme = [&](bool mx) {
        int64_t best = 0;
        for (int64_t i = 0; i < n; ++i) {
            if (std::isnan(xs[size_t(best)])) break;
            if (std::isnan(xs[size_t(i)]) || (mx ? xs[size_t(i)] > xs[size_t(best)]
                                                 : xs[size_t(i)] < xs[size_t(best)]))
                best = i;
        }
        r.value = xs[size_t(best)];
        r.index = best;
    };
    ld sum = 0, sabs = 0;
    for (double x : xs) {
        sum += x;
        sabs += std::fabs(x);
    }
    switch (op) {
    case ReduceOp::Sum: r.value = sum, r.scale = sabs; break;
    case ReduceOp::Mean:
        r.value = is_int ? ld(int64_t(sum) / std::max<int64_t>(n, 1)) : sum / ld(n);
        r.scale = sabs / std::max<ld>(1, ld(n));
        break;
    case ReduceOp::Max:
    case ReduceOp::ArgMax: extreme(true); break;
    case ReduceOp::Min:
    case ReduceOp::ArgMin: extreme(false); break;
    case ReduceOp::Var: {
        const ld mean = sum / ld(n);
        ld m2 = 0, sq = 0;
        for (double x : xs) m2 += (x - mean) * (x - mean), sq += ld(x) * x;
        const ld denom = std::max<ld>(0, ld(n) - ld(pa));
        r.value = m2 / denom;
        r.scale = sq / (denom > 0 ? denom : 1);
        break;
    }
    case ReduceOp::Norm: {
        if (std::isinf(pa)) {
            ld m = pa > 0 ? 0 : INFINITY;
            bool nan = false;
            for (double x : xs) {
                nan |= std::isnan(x);
                m = pa > 0 ? std::max<ld>(m, std::fabs(x)) : std::min<ld>(m, std::fabs(x));
            }
            r.value = nan ? NAN : m;
        } else if (pa == 0) {
            for (double x : xs) r.value += x != 0 ? 1 : 0;
        } else {
            ld s = 0;
            for (double x : xs) s += std::pow(std::fabs(ld(x)), ld(pa));
            r.value = std::pow(s, 1 / ld(pa));
        }
        break;
    }
    case ReduceOp::LogSumExp: {
        ld m = -INFINITY;
        bool nan = false;
        for (double x : xs) nan |= std::isnan(x), m = std::max<ld>(m, x);
        if (nan) r.value = NAN;
        else if (std::isinf(m)) r.value = m;
        else {
            ld s = 0;
            for (double x : xs) s += std::exp(ld(x) - m);
            r.value = m + std::log(s);
        }
        r.scale = 1;
        break;
    }
    default: break;
    }
    return r;
}

bool close(ld got, ld want, ld tol) {
    if (std::isnan(want)) return std::isnan(got);
    if (std::isinf(want)) return got == want;
    return std::fabs(got - want) <= tol;
}

// Reduces the trailing `rd` dims of x and compares every output with the reference.
void test_reduce_case(ReduceOp op, const Buf& x, int rd, double pa, bool with_indices,
                      DType out_dtype, const std::string& tag) {
    CpuBackend cpu;
    const int nk = x.v.ndim - rd;
    std::vector<int64_t> kshape(x.v.shape, x.v.shape + nk);
    Buf out = make_contig(out_dtype, kshape);
    Buf idx = make_contig(DType::Int64, kshape);
    const bool is_arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
    OpParams p;
    p.a = pa;
    const std::string what = std::string(op_str(op)) + "(" + dtype_name(x.v.dtype) + "->" +
                             dtype_name(out_dtype) + ", x=" + shape_str(x.v) +
                             ", rd=" + std::to_string(rd) + ", p=" + std::to_string(pa) + ") " +
                             tag;
    try {
        cpu.reduce(op, x.v, rd, out.v, with_indices ? &idx.v : nullptr, p);
    } catch (const std::exception& e) {
        check(false, what + ": threw " + e.what());
        return;
    }
    int64_t K = 1, R = 1;
    for (int d = 0; d < nk; ++d) K *= x.v.shape[d];
    for (int d = nk; d < x.v.ndim; ++d) R *= x.v.shape[d];
    const bool f32 = x.v.dtype == DType::Float32;
    const bool is_int = x.v.dtype == DType::Int64;
    int bad = 0;
    int64_t kidx[kMaxDims] = {};
    for (int64_t k = 0; k < K; ++k) {
        std::vector<double> xs;
        int64_t ridx[kMaxDims] = {};
        for (int64_t r = 0; r < R; ++r) {
            int64_t full[kMaxDims];
            for (int d = 0; d < nk; ++d) full[d] = kidx[d];
            for (int d = nk; d < x.v.ndim; ++d) full[d] = ridx[d - nk];
            xs.push_back(x.get(x.offset(full)));
            for (int d = rd - 1; d >= 0; --d) {
                if (++ridx[d] < x.v.shape[nk + d]) break;
                ridx[d] = 0;
            }
        }
        const RefResult ref = ref_reduce(op, xs, pa, is_int && out_dtype == DType::Int64);
        bool ok = true;
        if (is_arg) {
            ok = int64_t(out.get(k)) == ref.index;
        } else {
            const ld got = out.get(k);
            const bool f32_out = out_dtype == DType::Float32;
            const ld rtol = f32 || f32_out ? 1e-6 : 1e-12;
            const ld stol = f32 ? 1e-9 : 4e-14;
            ld tol = rtol * std::fabs(ref.value) + stol * ref.scale;
            if (op == ReduceOp::LogSumExp) tol = rtol * (std::fabs(ref.value) + 2);
            if (op == ReduceOp::Max || op == ReduceOp::Min || is_int) tol = 0;
            if (f32_out && !f32) tol = 1e-6 * std::fabs(ref.value); // int64 mean as float32
            ok = close(got, ref.value, tol);
            if (with_indices && (op == ReduceOp::Max || op == ReduceOp::Min))
                ok = ok && int64_t(idx.get(k)) == ref.index;
            if (!ok && bad < 3)
                std::printf("   out[%lld] got %.17Lg want %.17Lg (index %lld want %lld)\n",
                            (long long)k, got, ref.value, (long long)idx.get(k),
                            (long long)ref.index);
        }
        bad += !ok;
        for (int d = nk - 1; d >= 0; --d) {
            if (++kidx[d] < x.v.shape[d]) break;
            kidx[d] = 0;
        }
    }
    check(bad == 0, what + ": " + std::to_string(bad) + " wrong outputs");
}

void inject_specials(Buf& x, double nan_p, double inf_p) {
    for (int64_t off : x.offsets()) {
        const double u = std::uniform_real_distribution<double>(0, 1)(g_rng);
        if (u < nan_p) x.set(off, NAN);
        else if (u < nan_p + inf_p) x.set(off, rand_int(0, 1) ? INFINITY : -INFINITY);
    }
}

void test_reduce_random() {
    const ReduceOp ops[] = {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min,
                            ReduceOp::ArgMax, ReduceOp::ArgMin, ReduceOp::Var, ReduceOp::Norm,
                            ReduceOp::LogSumExp};
    const double norm_ps[] = {2, 1, 0, INFINITY, -INFINITY, 3, 0.5, -1};
    for (int iter = 0; iter < 1500; ++iter) {
        const ReduceOp op = ops[iter % 9];
        const bool float_only =
            op == ReduceOp::Var || op == ReduceOp::Norm || op == ReduceOp::LogSumExp;
        const int dti = int(rand_int(0, float_only ? 1 : 2));
        const DType dt = dti == 0 ? DType::Float32 : dti == 1 ? DType::Float64 : DType::Int64;
        const int ndim = int(rand_int(0, 5));
        Buf x = make_buf(dt, rand_shape(ndim, 6), Kind(rand_int(0, int(Kind::Count) - 1)));
        const int mode = int(rand_int(0, 2));
        fill_random(x, mode == 2 ? 0 : mode);
        if (dt != DType::Int64 && rand_int(0, 4) == 0) inject_specials(x, 0.05, 0.05);
        int rd = int(rand_int(0, ndim));
        double pa = 0;
        if (op == ReduceOp::Norm) pa = norm_ps[rand_int(0, 7)];
        if (op == ReduceOp::Var) pa = double(rand_int(0, 2));
        const bool with_idx = (op == ReduceOp::Max || op == ReduceOp::Min) && rand_int(0, 1);
        const bool is_arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
        const DType out_dt = is_arg ? DType::Int64 : dt;
        test_reduce_case(op, x, rd, pa, with_idx, out_dt, "random #" + std::to_string(iter));
    }
}

// Larger shapes: the vectorised runs, the column (lanes) loop, and the threaded paths (run at
// several thread counts, including an odd one for uneven splits).
void test_reduce_large() {
    struct Case {
        std::vector<int64_t> shape;
        std::vector<int> perm; // view dim i = storage dim perm[i]
        int rd;
    };
    const std::vector<Case> cases = {
        {{128, 256}, {1, 0}, 1},       // bias gradient: sum over the batch
        {{300, 257}, {1, 0}, 1},       // column loop with a ragged chunk
        {{4096, 100}, {0, 1}, 1},      // rows
        {{50000}, {0}, 1},             // one long row, split across threads
        {{3, 40000}, {0, 1}, 1},       // few long rows
        {{20000, 16}, {1, 0}, 1},      // few wide columns, many rows: rows split
        {{7, 64, 90}, {0, 2, 1}, 2},   // mixed
        {{64, 50, 30}, {2, 0, 1}, 2},  // strided reduced dims
        {{40, 30, 50}, {1, 2, 0}, 1},  // reduce a middle-strided dim
        {{200, 300}, {0, 1}, 2},       // full reduction
        {{200, 300}, {1, 0}, 2},       // full reduction of a transposed matrix
        {{100000, 3}, {0, 1}, 1},      // many tiny rows
    };
    const ReduceOp ops[] = {ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min,
                            ReduceOp::ArgMax, ReduceOp::ArgMin, ReduceOp::Var, ReduceOp::Norm,
                            ReduceOp::LogSumExp};
    const int saved = omp_get_max_threads();
    for (int threads : {1, 2, 3}) {
        omp_set_num_threads(threads);
        for (size_t ci = 0; ci < cases.size(); ++ci) {
            const Case& c = cases[ci];
            for (DType dt : {DType::Float32, DType::Float64, DType::Int64}) {
                // Storage is contiguous in `shape`; the view permutes it.
                std::vector<int64_t> st(c.shape.size());
                Buf base = make_contig(dt, c.shape);
                fill_random(base, ci % 3 == 1 ? 1 : 0);
                if (dt != DType::Int64 && ci % 4 == 3) inject_specials(base, 0.0005, 0.0);
                Buf x = base;
                x.v.data = x.storage.data();
                for (size_t i = 0; i < c.perm.size(); ++i) {
                    x.v.shape[i] = base.v.shape[c.perm[i]];
                    x.v.strides[i] = base.v.strides[c.perm[i]];
                }
                for (ReduceOp op : ops) {
                    const bool float_only = op == ReduceOp::Var || op == ReduceOp::Norm ||
                                            op == ReduceOp::LogSumExp;
                    if (dt == DType::Int64 && float_only) continue;
                    const bool is_arg = op == ReduceOp::ArgMax || op == ReduceOp::ArgMin;
                    const double pa = op == ReduceOp::Var ? 1.0 : op == ReduceOp::Norm ? 2.0 : 0.0;
                    const bool with_idx = op == ReduceOp::Max || op == ReduceOp::Min;
                    test_reduce_case(op, x, c.rd, pa, with_idx, is_arg ? DType::Int64 : dt,
                                     "large #" + std::to_string(ci) + " threads " +
                                         std::to_string(threads));
                }
                if (dt == DType::Float32) {
                    for (double pa : {1.0, 0.0, double(INFINITY), -double(INFINITY), 3.0})
                        test_reduce_case(ReduceOp::Norm, x, c.rd, pa, false, dt,
                                         "large #" + std::to_string(ci));
                }
            }
        }
    }
    omp_set_num_threads(saved);
}

void test_reduce_specific() {
    CpuBackend cpu;
    auto vec1 = [](DType dt, std::vector<double> vals) {
        Buf b = make_contig(dt, {int64_t(vals.size())});
        for (size_t i = 0; i < vals.size(); ++i) b.set(int64_t(i), vals[i]);
        return b;
    };
    auto reduce1 = [&](ReduceOp op, const Buf& x, double pa, int64_t* index = nullptr) {
        Buf out = make_contig(op == ReduceOp::ArgMax || op == ReduceOp::ArgMin ? DType::Int64
                                                                                 : x.v.dtype,
                              {});
        Buf idx = make_contig(DType::Int64, {});
        OpParams p;
        p.a = pa;
        cpu.reduce(op, x.v, 1, out.v, index ? &idx.v : nullptr, p);
        if (index) *index = int64_t(idx.get(0));
        return out.get(0);
    };
    const double nan = NAN, inf = INFINITY;
    for (DType dt : {DType::Float32, DType::Float64}) {
        int64_t i = -1;
        double v = reduce1(ReduceOp::Max, vec1(dt, {1, nan, 3, nan}), 0, &i);
        check(std::isnan(v) && i == 1, "max NaN propagates with the first NaN's index");
        v = reduce1(ReduceOp::Min, vec1(dt, {1, 0, nan, 0}), 0, &i);
        check(std::isnan(v) && i == 2, "min NaN index");
        check(reduce1(ReduceOp::ArgMax, vec1(dt, {1, 3, 3, 0}), 0) == 1, "argmax first tie");
        check(reduce1(ReduceOp::ArgMin, vec1(dt, {1, 0, 3, 0}), 0) == 1, "argmin first tie");
        check(reduce1(ReduceOp::ArgMax, vec1(dt, {1, nan, 3, nan}), 0) == 1, "argmax NaN");
        check(reduce1(ReduceOp::LogSumExp, vec1(dt, {inf, -inf, 1}), 0) == inf, "lse +inf");
        check(reduce1(ReduceOp::LogSumExp, vec1(dt, {-inf, -inf}), 0) == -inf, "lse all -inf");
        check(reduce1(ReduceOp::LogSumExp, vec1(dt, {inf, inf}), 0) == inf, "lse inf inf");
        check(std::isnan(reduce1(ReduceOp::LogSumExp, vec1(dt, {inf, nan}), 0)), "lse NaN");
        check(std::fabs(reduce1(ReduceOp::LogSumExp, vec1(dt, {1000, 1000}), 0) -
                        (1000 + std::log(2.0))) < 1e-3,
              "lse large values do not overflow");
        check(std::isnan(reduce1(ReduceOp::Var, vec1(dt, {1}), 1)), "var of one element NaN");
        check(std::isinf(reduce1(ReduceOp::Var, vec1(dt, {1, 2, 3}), 5)), "var N<corr -> inf");
        check(std::isnan(reduce1(ReduceOp::Var, vec1(dt, {1, 1}), 2)), "var 0/0 -> NaN");
        check(std::isnan(reduce1(ReduceOp::Var, vec1(dt, {1, inf}), 1)), "var inf -> NaN");
        check(reduce1(ReduceOp::Norm, vec1(dt, {1, nan}), 0) == 2, "norm0 counts NaN");
        check(std::isnan(reduce1(ReduceOp::Norm, vec1(dt, {1, nan}), inf)), "norm inf NaN");
        check(reduce1(ReduceOp::Norm, vec1(dt, {0, 2}), -1) == 0, "norm -1 with a zero");
        check(reduce1(ReduceOp::Norm, vec1(dt, {0, 2}), -inf) == 0, "norm -inf");
        check(reduce1(ReduceOp::Norm, vec1(dt, {3, -4}), 2) == 5, "norm2");
        // Empty reductions.
        Buf e = make_contig(dt, {3, 0});
        Buf o = make_contig(dt, {3});
        OpParams p;
        cpu.reduce(ReduceOp::Sum, e.v, 1, o.v, nullptr, p);
        check(o.get(0) == 0 && o.get(2) == 0, "empty sum is 0");
        cpu.reduce(ReduceOp::Mean, e.v, 1, o.v, nullptr, p);
        check(std::isnan(o.get(1)), "empty mean is NaN");
        cpu.reduce(ReduceOp::Var, e.v, 1, o.v, nullptr, p);
        check(std::isnan(o.get(1)), "empty var is NaN");
        cpu.reduce(ReduceOp::LogSumExp, e.v, 1, o.v, nullptr, p);
        check(o.get(1) == -inf, "empty logsumexp is -inf");
        p.a = 2;
        cpu.reduce(ReduceOp::Norm, e.v, 1, o.v, nullptr, p);
        check(o.get(1) == 0, "empty 2-norm is 0");
        expect_throw<IndexError>([&] { cpu.reduce(ReduceOp::Max, e.v, 1, o.v, nullptr, p); },
                                 "empty max", "max(): cannot reduce over a zero-size dimension");
        Buf oi = make_contig(DType::Int64, {3});
        expect_throw<IndexError>(
            [&] { cpu.reduce(ReduceOp::ArgMin, e.v, 1, oi.v, nullptr, p); }, "empty argmin",
            "argmin(): cannot reduce over a zero-size dimension");
        p.a = inf;
        expect_throw<IndexError>([&] { cpu.reduce(ReduceOp::Norm, e.v, 1, o.v, nullptr, p); },
                                 "empty inf norm", "inf norm");
        // Nothing to write: no error and no access.
        Buf e0 = make_contig(dt, {0, 4});
        Buf o0 = make_contig(dt, {0});
        cpu.reduce(ReduceOp::Max, e0.v, 1, o0.v, nullptr, p);
        check(true, "max over [0,4] dim 1");
    }
    // A float64 sum that needs more than naive summation: 1e6 values around 1e8 with zero
    // mean offset; the reference is exact in long double.
    {
        const int64_t n = 1 << 20;
        Buf x = make_contig(DType::Float64, {n});
        ld exact = 0;
        for (int64_t i = 0; i < n; ++i) {
            const double v = 1e8 + rand_normal();
            x.set(i, v);
            exact += v;
        }
        Buf o = make_contig(DType::Float64, {});
        cpu.reduce(ReduceOp::Sum, x.v, 1, o.v, nullptr, {});
        check(std::fabs(ld(o.get(0)) - exact) <= 1e-13 * std::fabs(exact),
              "float64 sum of 2^20 values is accurate");
        cpu.reduce(ReduceOp::Var, x.v, 1, o.v, nullptr, {1.0, 0.0});
        ld mean = exact / n, m2 = 0;
        for (int64_t i = 0; i < n; ++i) m2 += (x.get(i) - mean) * (x.get(i) - mean);
        check(std::fabs(ld(o.get(0)) - m2 / (n - 1)) <= 1e-9 * (m2 / (n - 1)),
              "float64 var with a large offset is stable");
    }
    // ArgMax output variants: out int64 plus a separate indices view; values + indices.
    {
        Buf x = vec1(DType::Float32, {1, 5, 2, 5});
        Buf out = make_contig(DType::Int64, {});
        Buf idx = make_contig(DType::Int64, {});
        cpu.reduce(ReduceOp::ArgMax, x.v, 1, out.v, &idx.v, {});
        check(out.get(0) == 1 && idx.get(0) == 1, "argmax into out and indices");
        Buf vals = make_contig(DType::Float32, {});
        cpu.reduce(ReduceOp::ArgMax, x.v, 1, vals.v, &idx.v, {});
        check(vals.get(0) == 5 && idx.get(0) == 1, "argmax with values out");
    }
    // int64 mean: integer (truncating) or floating output.
    {
        Buf x = vec1(DType::Int64, {1, 2, 4});
        Buf oi = make_contig(DType::Int64, {});
        Buf of = make_contig(DType::Float64, {});
        Buf of32 = make_contig(DType::Float32, {});
        cpu.reduce(ReduceOp::Mean, x.v, 1, oi.v, nullptr, {});
        cpu.reduce(ReduceOp::Mean, x.v, 1, of.v, nullptr, {});
        cpu.reduce(ReduceOp::Mean, x.v, 1, of32.v, nullptr, {});
        check(oi.get(0) == 2 && std::fabs(of.get(0) - 7.0 / 3) < 1e-15 &&
                  std::fabs(of32.get(0) - 7.0 / 3) < 1e-6,
              "int64 mean");
    }
    // Dtype errors.
    {
        Buf xu = make_contig(DType::UInt8, {4});
        Buf ou = make_contig(DType::UInt8, {});
        expect_throw<DTypeError>([&] { cpu.reduce(ReduceOp::Sum, xu.v, 1, ou.v, nullptr, {}); },
                                 "sum uint8", "sum(): dtype uint8 is not supported");
        Buf xi = make_contig(DType::Int64, {4});
        Buf oi = make_contig(DType::Int64, {});
        expect_throw<DTypeError>([&] { cpu.reduce(ReduceOp::Var, xi.v, 1, oi.v, nullptr, {}); },
                                 "var int64", "var(): dtype int64");
        expect_throw<DTypeError>(
            [&] { cpu.reduce(ReduceOp::LogSumExp, xi.v, 1, oi.v, nullptr, {}); }, "lse int64",
            "logsumexp(): dtype int64");
        Buf xf = make_contig(DType::Float32, {4});
        expect_throw<DTypeError>([&] { cpu.reduce(ReduceOp::Sum, xf.v, 1, oi.v, nullptr, {}); },
                                 "sum wrong out dtype", "output dtype int64");
        Buf o2 = make_contig(DType::Float32, {2});
        expect_throw<ShapeError>([&] { cpu.reduce(ReduceOp::Sum, xf.v, 1, o2.v, nullptr, {}); },
                                 "sum wrong out shape", "sum()");
    }
}

// ----- softmax --------------------------------------------------------------------------------

void test_softmax() {
    CpuBackend cpu;
    for (int iter = 0; iter < 400; ++iter) {
        const DType dt = iter % 2 ? DType::Float64 : DType::Float32;
        const bool f32 = dt == DType::Float32;
        const bool log = (iter / 2) % 2;
        std::vector<int64_t> shape = iter % 10 == 0 ? rand_shape(int(rand_int(1, 2)), 300)
                                                    : rand_shape(int(rand_int(1, 4)), 9);
        if (iter % 37 == 0) shape = {64, 600};     // threaded rows
        if (iter % 41 == 0) shape = {40, 30, 300}; // threaded columns
        const int ndim = int(shape.size());
        const int dim = int(rand_int(0, int(shape.size()) - 1));
        Buf x = make_contig(dt, shape), y = make_contig(dt, shape);
        Buf gy = make_contig(dt, shape), gx = make_contig(dt, shape);
        const double spread = iter % 3 == 0 ? 30.0 : 3.0;
        for (int64_t i = 0; i < x.v.numel(); ++i) {
            x.set(i, rand_normal() * spread);
            gy.set(i, rand_normal());
        }
        if (iter % 11 == 5) x.set(0, -INFINITY);
        cpu.softmax(x.v, dim, log, y.v);
        cpu.softmax_backward(y.v, gy.v, dim, log, gx.v);
        int64_t outer = 1, D = shape[size_t(dim)], inner = 1;
        for (int d = 0; d < dim; ++d) outer *= shape[size_t(d)];
        for (int d = dim + 1; d < ndim; ++d) inner *= shape[size_t(d)];
        int bad = 0, bad_b = 0;
        for (int64_t o = 0; o < outer; ++o) {
            for (int64_t in = 0; in < inner; ++in) {
                auto at = [&](int64_t d) { return (o * D + d) * inner + in; };
                ld m = -INFINITY;
                for (int64_t d = 0; d < D; ++d) m = std::max<ld>(m, x.get(at(d)));
                // x - max is rounded in the input dtype, as in PyTorch.
                auto shifted = [&](int64_t d) {
                    return f32 ? ld(float(x.get(at(d))) - float(m)) : ld(x.get(at(d)) - double(m));
                };
                ld s = 0;
                for (int64_t d = 0; d < D; ++d) s += std::exp(shifted(d));
                ld sgy = 0, sgyy = 0, sabs = 0;
                for (int64_t d = 0; d < D; ++d) {
                    sgy += gy.get(at(d));
                    sgyy += ld(gy.get(at(d))) * y.get(at(d));
                    sabs += std::fabs(gy.get(at(d)));
                }
                const ld rtol = f32 ? 1e-6 : 1e-12;
                for (int64_t d = 0; d < D; ++d) {
                    const ld want = log ? shifted(d) - std::log(s) : std::exp(shifted(d)) / s;
                    const ld got = y.get(at(d));
                    // log: log(sum) of a sum near 1 carries an absolute rounding error of a
                    // few eps, as in PyTorch. f32 values below the subnormal range round to 0.
                    const ld eps = f32 ? ld(FLT_EPSILON) : ld(DBL_EPSILON);
                    const ld tol = log ? rtol * std::fabs(want) + 4 * eps * (1 - shifted(d))
                                       : rtol * std::fabs(want) + (f32 ? 1.5e-45 : 1e-300);
                    if (!close(got, want, tol)) {
                        if (bad++ < 2)
                            std::printf("   softmax y %.10Lg want %.10Lg\n", got, want);
                    }
                    // Backward from the kernel's own y.
                    const ld yv = y.get(at(d)), g = gy.get(at(d));
                    const ld wb = log ? g - std::exp(yv) * sgy : yv * (g - sgyy);
                    const ld tb = log ? rtol * (std::fabs(g) + std::exp(yv) * sabs)
                                      : rtol * std::fabs(yv) * (std::fabs(g) + sabs);
                    if (!close(gx.get(at(d)), wb, tb + 1e-30)) {
                        if (bad_b++ < 2)
                            std::printf("   softmax gx %.10g want %.10Lg\n", gx.get(at(d)), wb);
                    }
                }
            }
        }
        const std::string what = std::string(log ? "log_softmax" : "softmax") + "(" +
                                 dtype_name(dt) + ", " + shape_str(x.v) + ", dim " +
                                 std::to_string(dim) + ")";
        check(bad == 0, what + ": " + std::to_string(bad) + " wrong");
        check(bad_b == 0, what + " backward: " + std::to_string(bad_b) + " wrong");
    }
    // Special rows: all -inf gives NaN (0/0) and +inf gives NaN, as in PyTorch; NaN spreads.
    for (DType dt : {DType::Float32, DType::Float64}) {
        Buf x = make_contig(dt, {3, 2}), y = make_contig(dt, {3, 2});
        const double v[] = {-INFINITY, -INFINITY, INFINITY, 1.0, NAN, 2.0};
        for (int i = 0; i < 6; ++i) x.set(i, v[i]);
        for (bool log : {false, true}) {
            cpu.softmax(x.v, 1, log, y.v);
            bool ok = true;
            for (int i = 0; i < 6; ++i) ok = ok && std::isnan(y.get(i));
            check(ok, std::string("softmax special rows ") + dtype_name(dt));
        }
        // Extreme differences: exp underflows gracefully (subnormal, then 0).
        Buf x2 = make_contig(dt, {4}), y2 = make_contig(dt, {4});
        const double v2[] = {0.0, -90.0, -103.0, -200.0};
        for (int i = 0; i < 4; ++i) x2.set(i, v2[i]);
        cpu.softmax(x2.v, 0, false, y2.v);
        const bool f32 = dt == DType::Float32;
        bool ok = std::fabs(y2.get(0) - 1.0) < 1e-7 && (f32 ? y2.get(3) == 0.0 : y2.get(3) > 0);
        for (int i = 1; i < (f32 ? 3 : 4); ++i) {
            const double want = std::exp(v2[i]);
            const double tol = f32 ? std::max(1e-6 * want, 1.5e-45) : 1e-12 * want;
            ok = ok && std::fabs(y2.get(i) - want) <= tol;
        }
        check(ok, std::string("softmax underflow ") + dtype_name(dt));
    }
    Buf xi = make_contig(DType::Int64, {3}), yi = make_contig(DType::Int64, {3});
    expect_throw<DTypeError>([&] { cpu.softmax(xi.v, 0, false, yi.v); }, "softmax int64",
                             "softmax(): dtype int64");
    Buf xf = make_contig(DType::Float32, {3}), yf = make_contig(DType::Float32, {3});
    expect_throw<IndexError>([&] { cpu.softmax(xf.v, 1, true, yf.v); }, "softmax bad dim",
                             "log_softmax(): dim 1");
}

// ----- gemm -----------------------------------------------------------------------------------

// A [B, R, C] operand: each matrix row- or column-major, optionally padded, batch-broadcast,
// or with a 0 stride inside the matrix (BLAS cannot address that: packed by the kernel).
Buf make_matrix(DType dt, int64_t B, int64_t R, int64_t C, int layout, bool batch0) {
    const int64_t pad = layout >= 2 ? 3 : 0;
    const bool col = layout % 2 == 1;
    const int64_t ld = (col ? R : C) + pad;
    const int64_t mat = ld * (col ? C : R) + 5;
    Buf b;
    b.v.dtype = dt;
    b.v.ndim = 3;
    b.v.shape[0] = B, b.v.shape[1] = R, b.v.shape[2] = C;
    b.v.strides[0] = batch0 ? 0 : mat;
    b.v.strides[1] = col ? 1 : ld;
    b.v.strides[2] = col ? ld : 1;
    if (layout == 4) b.v.strides[1] = 0; // rows broadcast: row-major with a 0 row stride
    if (R == 1 && rand_int(0, 1)) b.v.strides[1] = 4242; // arbitrary stride of a size-1 dim
    if (C == 1 && rand_int(0, 1)) b.v.strides[2] = 4242;
    if (B == 1 && rand_int(0, 1)) b.v.strides[0] = 777;
    b.storage.assign(size_t((std::max<int64_t>(1, batch0 ? 1 : B) * mat * 8 + 7) / 8 + 8), 0);
    b.v.data = b.storage.data();
    for (int64_t off : b.offsets()) b.set(off, rand_normal());
    return b;
}

void test_gemm() {
    CpuBackend cpu;
    const int64_t sizes[] = {0, 1, 2, 5, 17, 33};
    for (int iter = 0; iter < 600; ++iter) {
        const DType dt = iter % 2 ? DType::Float64 : DType::Float32;
        const int64_t B = rand_int(0, 9) == 0 ? 0 : rand_int(1, 3);
        const int64_t M = sizes[rand_int(0, 5)], N = sizes[rand_int(0, 5)],
                      K = sizes[rand_int(0, 5)];
        const int la = int(rand_int(0, 4)), lb = int(rand_int(0, 4));
        const bool a0 = rand_int(0, 3) == 0, b0 = rand_int(0, 2) == 0;
        Buf a = make_matrix(dt, B, M, K, la, a0);
        Buf b = make_matrix(dt, B, K, N, lb, b0);
        const bool c_col = rand_int(0, 4) == 0;
        Buf c = make_matrix(dt, B, M, N, c_col ? 1 : 0, false);
        const bool acc = rand_int(0, 1);
        std::vector<double> c0;
        for (int64_t off : c.offsets()) c0.push_back(c.get(off));
        cpu.batched_gemm(a.v, b.v, c.v, acc);
        int bad = 0;
        size_t ci = 0;
        for (int64_t i = 0; i < B; ++i)
            for (int64_t r = 0; r < M; ++r)
                for (int64_t q = 0; q < N; ++q, ++ci) {
                    ld want = acc ? ld(c0[ci]) : 0, mag = std::fabs(want);
                    for (int64_t k = 0; k < K; ++k) {
                        const int64_t ia[3] = {i, r, k}, ib[3] = {i, k, q};
                        const ld t = ld(a.get(a.offset(ia))) * b.get(b.offset(ib));
                        want += t;
                        mag += std::fabs(t);
                    }
                    const int64_t ic[3] = {i, r, q};
                    const ld tol = (dt == DType::Float32 ? 1e-6 : 1e-14) * (mag + 1e-30);
                    if (!close(c.get(c.offset(ic)), want, tol)) ++bad;
                }
        check(bad == 0, std::string("batched_gemm(") + dtype_name(dt) + ", a=" + shape_str(a.v) +
                            ", b=" + shape_str(b.v) + ", c=" + shape_str(c.v) +
                            (acc ? ", accumulate" : "") + "): " + std::to_string(bad) + " wrong");
    }
    // Larger: the fused (B*M) Linear path, the parallel small-batch path and a plain big one.
    struct Big {
        int64_t B, M, N, K;
        bool b0;
    };
    for (const Big& g : {Big{4, 50, 70, 60, true}, Big{64, 20, 20, 20, false},
                         Big{2, 130, 90, 110, false}}) {
        for (DType dt : {DType::Float32, DType::Float64}) {
            Buf a = make_matrix(dt, g.B, g.M, g.K, 0, false);
            Buf b = make_matrix(dt, g.B, g.K, g.N, 0, g.b0);
            Buf c = make_matrix(dt, g.B, g.M, g.N, 0, false);
            c.v.strides[0] = g.M * g.N; // contiguous, so the fused path applies
            c.v.strides[1] = g.N;
            a.v.strides[0] = g.M * g.K;
            a.v.strides[1] = g.K;
            cpu.batched_gemm(a.v, b.v, c.v, false);
            int bad = 0;
            for (int64_t i = 0; i < g.B; ++i)
                for (int64_t r = 0; r < g.M; ++r)
                    for (int64_t q = 0; q < g.N; ++q) {
                        ld want = 0, mag = 0;
                        for (int64_t k = 0; k < g.K; ++k) {
                            const int64_t ia[3] = {i, r, k}, ib[3] = {i, k, q};
                            const ld t = ld(a.get(a.offset(ia))) * b.get(b.offset(ib));
                            want += t;
                            mag += std::fabs(t);
                        }
                        const int64_t ic[3] = {i, r, q};
                        if (!close(c.get(c.offset(ic)), want,
                                   (dt == DType::Float32 ? 1e-6 : 1e-14) * mag))
                            ++bad;
                    }
            check(bad == 0, "batched_gemm big " + std::to_string(g.B) + "x" +
                                std::to_string(g.M) + "x" + std::to_string(g.N) + "x" +
                                std::to_string(g.K) + " " + dtype_name(dt));
        }
    }
    Buf a = make_matrix(DType::Float32, 1, 2, 3, 0, false);
    Buf b = make_matrix(DType::Float64, 1, 3, 2, 0, false);
    Buf c = make_matrix(DType::Float32, 1, 2, 2, 0, false);
    expect_throw<DTypeError>([&] { cpu.batched_gemm(a.v, b.v, c.v, false); }, "gemm mixed dtype",
                             "batched_gemm()");
    Buf b2 = make_matrix(DType::Float32, 1, 4, 2, 0, false);
    expect_throw<ShapeError>([&] { cpu.batched_gemm(a.v, b2.v, c.v, false); }, "gemm shapes",
                             "do not match");
    Buf ai = make_matrix(DType::Int64, 1, 2, 3, 0, false);
    Buf bi = make_matrix(DType::Int64, 1, 3, 2, 0, false);
    Buf ci = make_matrix(DType::Int64, 1, 2, 2, 0, false);
    expect_throw<DTypeError>([&] { cpu.batched_gemm(ai.v, bi.v, ci.v, false); }, "gemm int64",
                             "dtype int64 is not supported");
}

// ----- index ops ------------------------------------------------------------------------------

DType rand_dtype_any() {
    const DType all[] = {DType::Float32, DType::Float64, DType::Int64, DType::UInt8, DType::Bool,
                         DType::BFloat16};
    return all[rand_int(0, 5)];
}

void fill_bytes(Buf& b) {
    for (auto& w : b.storage) w = g_rng();
}

bool same_elem(const Buf& a, int64_t oa, const Buf& b, int64_t ob) {
    return std::memcmp(a.at(oa), b.at(ob), dtype_size(a.v.dtype)) == 0;
}

Buf rand_index(const std::vector<int64_t>& shape, int64_t size, Kind kind) {
    Buf idx = make_buf(DType::Int64, shape, kind);
    for (int64_t off : idx.offsets()) idx.set(off, double(rand_int(0, size - 1)));
    return idx;
}

void test_index() {
    CpuBackend cpu;
    for (int iter = 0; iter < 500; ++iter) {
        const DType dt = rand_dtype_any();
        const int ndim = int(rand_int(1, 4));
        std::vector<int64_t> xs = rand_shape(ndim, iter % 25 == 0 ? 60 : 6);
        const int dim = int(rand_int(0, ndim - 1));
        Buf x = make_buf(dt, xs, Kind(rand_int(0, int(Kind::Count) - 1)));
        fill_bytes(x);
        // index_select
        {
            const int64_t n = rand_int(0, 7);
            Buf index = rand_index({n}, xs[size_t(dim)], rand_int(0, 1) ? Kind::Contig : Kind::Padded);
            std::vector<int64_t> os = xs;
            os[size_t(dim)] = n;
            Buf out = make_buf(dt, os, rand_int(0, 1) ? Kind::Contig : Kind::Permuted);
            cpu.index_select(x.v, dim, index.v, out.v);
            int bad = 0;
            int64_t pos[kMaxDims] = {};
            for (int64_t off : out.offsets()) {
                int64_t xp[kMaxDims];
                std::copy(pos, pos + ndim, xp);
                xp[dim] = int64_t(index.get(index.v.strides[0] * pos[dim]));
                if (!same_elem(out, off, x, x.offset(xp))) ++bad;
                for (int d = ndim - 1; d >= 0; --d) {
                    if (++pos[d] < os[size_t(d)]) break;
                    pos[d] = 0;
                }
            }
            check(bad == 0, std::string("index_select(") + dtype_name(dt) + ", x=" +
                                shape_str(x.v) + ", dim " + std::to_string(dim) + ")");
        }
        // gather
        {
            std::vector<int64_t> is(static_cast<size_t>(ndim));
            for (int d = 0; d < ndim; ++d)
                is[size_t(d)] = d == dim ? rand_int(0, 7) : rand_int(1, xs[size_t(d)]);
            Buf index = rand_index(is, xs[size_t(dim)], Kind(rand_int(0, int(Kind::Count) - 1)));
            Buf out = make_buf(dt, is, rand_int(0, 1) ? Kind::Contig : Kind::Permuted);
            cpu.gather(x.v, dim, index.v, out.v);
            int bad = 0;
            int64_t pos[kMaxDims] = {};
            const auto ioffs = index.offsets();
            size_t k = 0;
            for (int64_t off : out.offsets()) {
                int64_t xp[kMaxDims];
                std::copy(pos, pos + ndim, xp);
                xp[dim] = int64_t(index.get(ioffs[k++]));
                if (!same_elem(out, off, x, x.offset(xp))) ++bad;
                for (int d = ndim - 1; d >= 0; --d) {
                    if (++pos[d] < is[size_t(d)]) break;
                    pos[d] = 0;
                }
            }
            check(bad == 0, std::string("gather(") + dtype_name(dt) + ", x=" + shape_str(x.v) +
                                ", index=" + shape_str(index.v) + ", dim " +
                                std::to_string(dim) + ")");
        }
        // scatter_add (arithmetic dtypes), duplicates accumulate; src may exceed index.
        {
            const DType sd = iter % 3 == 0 ? DType::Float32 : iter % 3 == 1 ? DType::Float64
                                                                                : DType::Int64;
            Buf self = make_buf(sd, xs, rand_int(0, 1) ? Kind::Contig : Kind::Permuted);
            fill_random(self, 0);
            std::vector<int64_t> is(static_cast<size_t>(ndim)), ss(static_cast<size_t>(ndim));
            for (int d = 0; d < ndim; ++d) {
                is[size_t(d)] = d == dim ? rand_int(0, 9) : rand_int(1, xs[size_t(d)]);
                ss[size_t(d)] = is[size_t(d)] + rand_int(0, 2);
            }
            Buf index = rand_index(is, xs[size_t(dim)], Kind(rand_int(0, 2)));
            Buf src = make_buf(sd, ss, Kind(rand_int(0, 2)));
            fill_random(src, 0);
            // Reference: per self element, in long double.
            std::vector<ld> want;
            const auto soffs = self.offsets();
            for (int64_t off : soffs) want.push_back(self.get(off));
            auto self_flat = [&](const int64_t* p) {
                int64_t f = 0;
                for (int d = 0; d < ndim; ++d) f = f * xs[size_t(d)] + p[d];
                return f;
            };
            int64_t pos[kMaxDims] = {};
            for (int64_t ioff : index.offsets()) {
                int64_t sp[kMaxDims];
                std::copy(pos, pos + ndim, sp);
                sp[dim] = int64_t(index.get(ioff));
                want[size_t(self_flat(sp))] += src.get(src.offset(pos));
                for (int d = ndim - 1; d >= 0; --d) {
                    if (++pos[d] < is[size_t(d)]) break;
                    pos[d] = 0;
                }
            }
            cpu.scatter_add(self.v, dim, index.v, src.v);
            int bad = 0;
            for (size_t i = 0; i < soffs.size(); ++i) {
                const ld tol = sd == DType::Float32 ? 1e-5 * (1 + std::fabs(want[i])) : 1e-12;
                if (!close(self.get(soffs[i]), want[i], tol)) ++bad;
            }
            check(bad == 0, std::string("scatter_add(") + dtype_name(sd) + ", self=" +
                                shape_str(self.v) + ", index=" + shape_str(index.v) + ")");
        }
        // int_range over a random strided view
        {
            Buf v = make_buf(DType::Int64, rand_shape(int(rand_int(0, 4)), 5),
                             Kind(rand_int(0, int(Kind::Count) - 1)));
            for (int64_t off : v.offsets()) v.set(off, double(rand_int(-1000, 1000)));
            int64_t lo = 0, hi = 0, wlo = INT64_MAX, whi = INT64_MIN;
            for (int64_t off : v.offsets()) {
                wlo = std::min(wlo, int64_t(v.get(off)));
                whi = std::max(whi, int64_t(v.get(off)));
            }
            const bool got = cpu.int_range(v.v, &lo, &hi);
            check(got && lo == wlo && hi == whi, "int_range " + shape_str(v.v));
        }
    }
    // Large (threaded) index_select / gather and int_range.
    {
        Buf x = make_contig(DType::Float32, {1000, 64});
        fill_bytes(x);
        Buf index = rand_index({5000}, 1000, Kind::Contig);
        Buf out = make_contig(DType::Float32, {5000, 64});
        cpu.index_select(x.v, 0, index.v, out.v);
        int bad = 0;
        for (int64_t j = 0; j < 5000; ++j)
            bad += std::memcmp(out.at(j * 64), x.at(int64_t(index.get(j)) * 64), 256) != 0;
        check(bad == 0, "index_select embedding lookup 5000x64");
        Buf gi = rand_index({1000, 64}, 1000, Kind::Contig);
        Buf go = make_contig(DType::Float32, {1000, 64});
        cpu.gather(x.v, 0, gi.v, go.v);
        bad = 0;
        for (int64_t i = 0; i < 1000; ++i)
            for (int64_t j = 0; j < 64; ++j)
                bad += !same_elem(go, i * 64 + j, x, int64_t(gi.get(i * 64 + j)) * 64 + j);
        check(bad == 0, "gather large");
        Buf big = make_contig(DType::Int64, {300, 400});
        for (int64_t i = 0; i < 120000; ++i) big.set(i, double(i % 977 - 300));
        big.set(77777, -5000);
        big.set(99999, 123456);
        int64_t lo = 0, hi = 0;
        check(cpu.int_range(big.v, &lo, &hi) && lo == -5000 && hi == 123456, "int_range large");
    }
    // Errors and edge cases.
    {
        Buf x = make_contig(DType::Float32, {5, 3});
        Buf index = make_contig(DType::Int64, {2});
        Buf out = make_contig(DType::Float32, {2, 3});
        index.set(0, 1);
        index.set(1, 7);
        expect_throw<IndexError>([&] { cpu.index_select(x.v, 0, index.v, out.v); },
                                 "index_select out of range",
                                 "index_select(): index 7 is out of bounds for dimension 0 with "
                                 "size 5");
        index.set(1, -1);
        expect_throw<IndexError>([&] { cpu.index_select(x.v, 0, index.v, out.v); },
                                 "index_select negative", "index -1 is out of bounds");
        Buf gi = make_contig(DType::Int64, {5, 2});
        Buf go = make_contig(DType::Float32, {5, 2});
        for (int i = 0; i < 10; ++i) gi.set(i, i % 3);
        gi.set(7, 3);
        expect_throw<IndexError>([&] { cpu.gather(x.v, 1, gi.v, go.v); }, "gather out of range",
                                 "gather(): index 3 is out of bounds for dimension 1 with size 3");
        // scatter_add must not touch self when an index is bad.
        Buf self = make_contig(DType::Float32, {5, 3});
        for (int i = 0; i < 15; ++i) self.set(i, i);
        Buf src = make_contig(DType::Float32, {5, 2});
        for (int i = 0; i < 10; ++i) src.set(i, 100);
        expect_throw<IndexError>([&] { cpu.scatter_add(self.v, 1, gi.v, src.v); },
                                 "scatter_add out of range", "scatter_add(): index 3");
        bool untouched = true;
        for (int i = 0; i < 15; ++i) untouched = untouched && self.get(i) == i;
        check(untouched, "scatter_add leaves self untouched on a bad index");
        Buf fi = make_contig(DType::Float32, {2});
        expect_throw<DTypeError>([&] { cpu.index_select(x.v, 0, fi.v, out.v); },
                                 "index_select float index", "index must be int64");
        Buf su = make_contig(DType::UInt8, {5, 3});
        Buf srcu = make_contig(DType::UInt8, {5, 2});
        for (int i = 0; i < 10; ++i) gi.set(i, 0);
        expect_throw<DTypeError>([&] { cpu.scatter_add(su.v, 1, gi.v, srcu.v); },
                                 "scatter_add uint8", "scatter_add(): dtype uint8");
        expect_throw<IndexError>([&] { cpu.index_select(x.v, 2, index.v, out.v); },
                                 "index_select bad dim", "dim 2 is out of range");
        // Empty index, and an empty dim that is never indexed.
        Buf e = make_contig(DType::Int64, {0});
        Buf eo = make_contig(DType::Float32, {0, 3});
        cpu.index_select(x.v, 0, e.v, eo.v);
        check(true, "index_select with an empty index");
        int64_t lo = 0, hi = 0;
        check(!cpu.int_range(e.v, &lo, &hi), "int_range of an empty view is false");
        Buf x0 = make_contig(DType::Float32, {0, 3});
        Buf i1 = make_contig(DType::Int64, {1});
        Buf o1 = make_contig(DType::Float32, {1, 3});
        expect_throw<IndexError>([&] { cpu.index_select(x0.v, 0, i1.v, o1.v); },
                                 "index_select from an empty dim",
                                 "index 0 is out of bounds for dimension 0 with size 0");
    }
}

} // namespace

int main() {
    test_reduce_specific();
    test_reduce_random();
    test_reduce_large();
    test_softmax();
    test_gemm();
    test_index();
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
