// The CPU backend's optimizer updates (train_kernels.h): one fused loop per parameter over the
// element functions of kernels/optim_update.h, split across threads by step_update.h (which
// gathers the trainer's statistics on the way). Compiled with -ffp-contract=off -fno-math-errno
// (core/CMakeLists.txt): rounding follows PyTorch op by op, and sqrt inlines so the loops
// vectorise. (Not `#pragma GCC optimize`: GCC then refuses to inline std::sqrt into the loops.)
#include "backend/cpu/cpu_train.h"
#include "backend/cpu/adam_denormal.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/step_update.h"
#include "backend/kernels/optim_update.h"

#include <myelin/device.h>
#include <myelin/error.h>

#include <algorithm>
#include <string>
#include <type_traits>

namespace myelin::backend {
namespace {

using namespace kernels;
using step_update::run_update;

// The update loops run in a copy compiled for FMA hardware when the CPU has it (std::fma is a
// slow library call otherwise); other multiply-adds are never contracted (see above).
#if defined(__GNUC__) && !defined(__clang__) && (defined(__x86_64__) || defined(__i386__))
template <typename F> __attribute__((target("fma"), flatten)) void run_with_fma(const F& f) {
    f();
}
bool cpu_has_fma() {
    static const bool has = __builtin_cpu_supports("fma");
    return has;
}
template <typename F> void run_kernel(const F& f) {
    if (cpu_has_fma())
        run_with_fma(f);
    else
        f();
}
#else
template <typename F> void run_kernel(const F& f) {
    f();
}
#endif

// `p + offset`, or null for an absent state buffer.
template <typename T> T* offset(T* p, int64_t by) {
    return p ? p + by : nullptr;
}
template <typename T> T* ptr(const View& v) {
    return static_cast<T*>(v.data);
}
template <typename T> T* ptr(const View* v) {
    return v ? static_cast<T*>(v->data) : nullptr;
}

template <typename T>
void sgd_loop(T* __restrict p, const T* __restrict g, T* __restrict buf, int64_t n,
              const SgdArgs<T>& a) {
    for (int64_t i = 0; i < n; ++i)
        sgd_element(i, p, g, buf, a);
}
template <typename T, bool kDecoupled>
void adam_fast_loop(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v,
                    int64_t n, const AdamArgs<T>& a) {
    if constexpr (std::is_same_v<T, float>) {
        // Chunks holding denormal first moments take the exact path that avoids the CPU's slow
        // handling of them (adam_denormal.h); the others the plain loop. Not with denormals
        // flushed (set_flush_denormal): there the plain loop is fast and gives the flushed zeros.
        namespace ad = adam_denormal;
        if (!flush_denormal() && ad::tiny_path_fits<kDecoupled>(a)) {
            constexpr int64_t kChunk = 1024;
            for (int64_t c = 0; c < n; c += kChunk) {
                const int64_t len = std::min(kChunk, n - c);
                if (ad::chunk_wants_tiny_path<kDecoupled>(p + c, g + c, m + c, v + c, len)) {
                    ad::tiny_loop<kDecoupled>(p + c, g + c, m + c, v + c, len, a);
                } else {
                    for (int64_t i = c; i < c + len; ++i)
                        adam_fast_element<T, kDecoupled>(i, p, g, m, v, a);
                }
            }
            return;
        }
    }
    for (int64_t i = 0; i < n; ++i)
        adam_fast_element<T, kDecoupled>(i, p, g, m, v, a);
}
template <typename T>
void adam_loop(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v,
               T* __restrict vmax, int64_t n, const AdamArgs<T>& a) {
    if (adam_is_fast(a)) {
        if (a.decoupled)
            adam_fast_loop<T, true>(p, g, m, v, n, a);
        else
            adam_fast_loop<T, false>(p, g, m, v, n, a);
        return;
    }
    for (int64_t i = 0; i < n; ++i)
        adam_element(i, p, g, m, v, vmax, a);
}
template <typename T>
void rmsprop_loop(T* __restrict p, const T* __restrict g, T* __restrict sq, T* __restrict ga,
                  T* __restrict buf, int64_t n, const RmsArgs<T>& a) {
    for (int64_t i = 0; i < n; ++i)
        rmsprop_element(i, p, g, sq, ga, buf, a);
}
template <typename T>
void adagrad_loop(T* __restrict p, const T* __restrict g, T* __restrict sum, int64_t n,
                  const AdagradArgs<T>& a) {
    for (int64_t i = 0; i < n; ++i)
        adagrad_element(i, p, g, sum, a);
}

template <typename T> SgdArgs<T> args(const SgdStep& s) {
    return {static_cast<T>(s.lr),
            static_cast<T>(s.momentum),
            static_cast<T>(s.dampening_c),
            static_cast<T>(s.weight_decay),
            s.nesterov,
            s.maximize,
            s.first};
}
template <typename T> AdamArgs<T> args(const AdamStep& s) {
    return {static_cast<T>(s.beta1),
            static_cast<T>(s.one_minus_beta1),
            static_cast<T>(s.beta2),
            static_cast<T>(s.one_minus_beta2),
            static_cast<T>(s.eps),
            static_cast<T>(s.weight_decay),
            static_cast<T>(s.decay_factor),
            static_cast<T>(s.bias_correction2_sqrt),
            static_cast<T>(s.neg_step_size),
            s.decoupled,
            s.amsgrad,
            s.maximize};
}
template <typename T> RmsArgs<T> args(const RmspropStep& s) {
    return {static_cast<T>(s.alpha),
            static_cast<T>(s.one_minus_alpha),
            static_cast<T>(s.eps),
            static_cast<T>(s.weight_decay),
            static_cast<T>(s.momentum),
            static_cast<T>(s.neg_lr),
            s.centered,
            s.maximize};
}
template <typename T> AdagradArgs<T> args(const AdagradStep& s) {
    return {static_cast<T>(s.weight_decay), static_cast<T>(s.eps), static_cast<T>(s.neg_clr),
            s.maximize};
}

void require_float(const char* op, const View& w) {
    if (w.dtype != DType::Float32 && w.dtype != DType::Float64)
        throw DTypeError(std::string(op) + ": expected float32 or float64 weights, got " +
                         dtype_name(w.dtype));
}

} // namespace

void CpuTrainKernels::sgd_step(const SgdStep& s, const View& w, const View& g, const View* momentum,
                               const UpdateStatsOut* stats) {
    require_float("sgd_step", w);
    const int64_t n = w.numel();
    auto run = [&](auto zero) {
        using T = decltype(zero);
        const SgdArgs<T> a = args<T>(s);
        T *p = ptr<T>(w), *b = ptr<T>(momentum);
        const T* gp = ptr<T>(g);
        run_kernel([&] {
            run_update(p, gp, n, stats, [&](int64_t i, int64_t len) {
                sgd_loop<T>(p + i, gp + i, offset(b, i), len, a);
            });
        });
    };
    if (w.dtype == DType::Float64)
        run(0.0);
    else
        run(0.0f);
}

void CpuTrainKernels::adam_step(const AdamStep& s, const View& w, const View& g,
                                const View& exp_avg, const View& exp_avg_sq,
                                const View* max_exp_avg_sq, const UpdateStatsOut* stats) {
    require_float("adam_step", w);
    const int64_t n = w.numel();
    auto run = [&](auto zero) {
        using T = decltype(zero);
        const AdamArgs<T> a = args<T>(s);
        T *p = ptr<T>(w), *m = ptr<T>(exp_avg), *v = ptr<T>(exp_avg_sq);
        T* vm = ptr<T>(max_exp_avg_sq);
        const T* gp = ptr<T>(g);
        run_kernel([&] {
            run_update(p, gp, n, stats, [&](int64_t i, int64_t len) {
                adam_loop<T>(p + i, gp + i, m + i, v + i, offset(vm, i), len, a);
            });
        });
    };
    if (w.dtype == DType::Float64)
        run(0.0);
    else
        run(0.0f);
}

void CpuTrainKernels::rmsprop_step(const RmspropStep& s, const View& w, const View& g,
                                   const View& square_avg, const View* grad_avg,
                                   const View* momentum, const UpdateStatsOut* stats) {
    require_float("rmsprop_step", w);
    const int64_t n = w.numel();
    auto run = [&](auto zero) {
        using T = decltype(zero);
        const RmsArgs<T> a = args<T>(s);
        T *p = ptr<T>(w), *sq = ptr<T>(square_avg);
        T *ga = ptr<T>(grad_avg), *b = ptr<T>(momentum);
        const T* gp = ptr<T>(g);
        run_kernel([&] {
            run_update(p, gp, n, stats, [&](int64_t i, int64_t len) {
                rmsprop_loop<T>(p + i, gp + i, sq + i, offset(ga, i), offset(b, i), len, a);
            });
        });
    };
    if (w.dtype == DType::Float64)
        run(0.0);
    else
        run(0.0f);
}

void CpuTrainKernels::adagrad_step(const AdagradStep& s, const View& w, const View& g,
                                   const View& sum, const UpdateStatsOut* stats) {
    require_float("adagrad_step", w);
    const int64_t n = w.numel();
    auto run = [&](auto zero) {
        using T = decltype(zero);
        const AdagradArgs<T> a = args<T>(s);
        T *p = ptr<T>(w), *sp = ptr<T>(sum);
        const T* gp = ptr<T>(g);
        run_kernel([&] {
            run_update(p, gp, n, stats, [&](int64_t i, int64_t len) {
                adagrad_loop<T>(p + i, gp + i, sp + i, len, a);
            });
        });
    };
    if (w.dtype == DType::Float64)
        run(0.0);
    else
        run(0.0f);
}

TrainKernels* CpuBackend::train_kernels() {
    static auto* kernels = new CpuTrainKernels; // never destroyed: used during exit
    return kernels;
}

} // namespace myelin::backend
