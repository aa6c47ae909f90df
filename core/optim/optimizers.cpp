// SGD, Adam/AdamW, RMSprop, Adagrad. Each parameter update is one fused loop over contiguous
// data that performs PyTorch 1.13's single-tensor ops element by element in the same order and
// precision (scalars rounded to the parameter's dtype, like PyTorch's CPU kernels), so
// trajectories agree to float32 rounding.
#include <myelin/error.h>
#include <myelin/optim/optim.h>

#include "optim/step_update.h"
#include "tensor/tensor_impl.h"

#include <algorithm>
#include <cmath>
#include <string>

// Rounding must follow PyTorch's op by op: no contraction of a * b + c into an FMA except where
// written (std::fma), and no errno from sqrt, so the loops vectorise: core/CMakeLists.txt
// compiles this file with -ffp-contract=off -fno-math-errno. (Not `#pragma GCC optimize`: GCC
// then refuses to inline std::sqrt into the loops, which stops them vectorising.)

namespace myelin::optim {
namespace {

// Contiguous working views of a parameter and its gradient. A non-contiguous parameter is
// updated through a contiguous copy written back at the end.
struct Slot {
    Tensor param; // the parameter itself
    Tensor work;  // contiguous data updated in place (== param when contiguous)
    Tensor grad;  // contiguous gradient in the parameter's dtype
    bool valid() const { return grad.defined(); }
    void commit() {
        if (!work.is_same(param))
            param.copy_(work);
        else
            detail::bump_version(param); // saved-for-backward checks see the update
    }
};

Slot prepare(const char* who, const Tensor& p) {
    Slot s;
    s.param = p;
    const Tensor g = p.grad();
    if (!g.defined()) return s;
    if (p.dtype() != DType::Float32 && p.dtype() != DType::Float64)
        throw DTypeError(std::string(who) + ": parameters must be float32 or float64, got " +
                         dtype_name(p.dtype()) + " (keep float32 master weights for AMP)");
    if (g.shape() != p.shape())
        throw ShapeError(std::string(who) + ": gradient shape " + g.shape().str() +
                         " does not match the parameter's " + p.shape().str());
    s.work = p.is_contiguous() ? p : p.contiguous();
    Tensor gc = g.dtype() == p.dtype() ? g : g.to(p.dtype());
    s.grad = gc.is_contiguous() ? gc : gc.contiguous();
    return s;
}

Tensor& state_tensor(ParamState& st, const char* key, const Tensor& like, double fill = 0.0) {
    auto it = st.find(key);
    if (it == st.end())
        it = st.emplace(key, full(like.shape(), fill, TensorOptions(like.dtype()))).first;
    return it->second;
}

// PyTorch's step counter: a 0-dim float32 tensor incremented before the update.
double increment_step(ParamState& st) {
    auto it = st.find("step");
    if (it == st.end()) it = st.emplace("step", zeros({}, TensorOptions(DType::Float32))).first;
    Tensor& t = it->second;
    if (t.dtype() != DType::Float32 || !t.is_contiguous()) t = t.to(DType::Float32).contiguous();
    float* v = t.data<float>();
    *v += 1.0f;
    return static_cast<double>(*v);
}

bool flag(const Options& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->second != 0.0;
}
double value(const Options& o, const char* key) {
    auto it = o.find(key);
    if (it == o.end()) throw Error(std::string("optimizer: missing option '") + key + "'");
    return it->second;
}

void check_nonneg(const char* what, double v) {
    if (!(v >= 0.0)) throw Error(std::string("Invalid ") + what + ": " + std::to_string(v));
}

// ---------------------------------------------------------------------------------------------
// Kernels (T = float or double). Each line mirrors one PyTorch op:
//   x.add(y, alpha=a) -> x + a * y;  x.addcmul_(y, z, value=v) -> x + v * y * z;
//   x.addcdiv_(y, z, value=v) -> x + v * y / z.

// PyTorch's CPU kernels (built with FMA) round x.add(y, alpha=a) as fma(a, y, x) and
// x.addcmul(y, z, value=v) as fma(v * y, z, x); we do the same so trajectories match to the ulp.
// addcdiv (x + v * y / z) has no fused form.
template <typename T> inline T add_alpha(T x, T alpha, T y) {
    return std::fma(alpha, y, x);
}
template <typename T> inline T addcmul(T x, T value, T y, T z) {
    return std::fma(value * y, z, x);
}

// The update loops run in a copy compiled for FMA hardware when the CPU has it (std::fma is a
// slow library call otherwise); other multiply-adds are never contracted (see the pragma).
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

using step_update::run_update;

// `p + offset`, or null for an absent state tensor.
template <typename T> T* offset(T* p, int64_t by) {
    return p ? p + by : nullptr;
}

template <typename T> struct SgdArgs {
    T lr, momentum, dampening_c, weight_decay;
    bool nesterov, maximize, first;
};
template <typename T>
void sgd_kernel(T* __restrict p, const T* __restrict g, T* __restrict buf, int64_t n,
                const SgdArgs<T>& a) {
    const T neg_lr = -a.lr;
    for (int64_t i = 0; i < n; ++i) {
        T d = a.maximize ? -g[i] : g[i];
        if (a.weight_decay != T(0)) d = add_alpha(d, a.weight_decay, p[i]);
        if (buf) {
            if (a.first) {
                buf[i] = d;
            } else {
                buf[i] = buf[i] * a.momentum;
                buf[i] = add_alpha(buf[i], a.dampening_c, d);
            }
            d = a.nesterov ? add_alpha(d, a.momentum, buf[i]) : buf[i];
        }
        p[i] = add_alpha(p[i], neg_lr, d);
    }
}

template <typename T> struct AdamArgs {
    T beta1, one_minus_beta1, beta2, one_minus_beta2, eps, weight_decay, decay_factor,
        bias_correction2_sqrt, neg_step_size;
    bool decoupled, amsgrad, maximize;
};
// Adam's common configurations (no amsgrad, no maximize; L2 decay only when set) without
// per-element branches, so the loop vectorises. Same operations, same rounding as the general
// loop below.
template <typename T, bool kDecoupled>
void adam_fast(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, int64_t n,
               const AdamArgs<T>& a) {
    for (int64_t i = 0; i < n; ++i) {
        T grad = g[i];
        if constexpr (kDecoupled) p[i] = p[i] * a.decay_factor;
        m[i] = add_alpha(m[i] * a.beta1, a.one_minus_beta1, grad);
        v[i] = addcmul(v[i] * a.beta2, a.one_minus_beta2, grad, grad);
        const T denom = std::sqrt(v[i]) / a.bias_correction2_sqrt + a.eps;
        p[i] = p[i] + a.neg_step_size * m[i] / denom;
    }
}

template <typename T>
void adam_kernel(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v,
                 T* __restrict vmax, int64_t n, const AdamArgs<T>& a) {
    if (!a.amsgrad && !a.maximize && (a.decoupled || a.weight_decay == T(0))) {
        if (a.decoupled)
            adam_fast<T, true>(p, g, m, v, n, a);
        else
            adam_fast<T, false>(p, g, m, v, n, a);
        return;
    }
    for (int64_t i = 0; i < n; ++i) {
        T grad = a.maximize ? -g[i] : g[i];
        if (a.decoupled)
            p[i] = p[i] * a.decay_factor;
        else if (a.weight_decay != T(0))
            grad = add_alpha(grad, a.weight_decay, p[i]);
        m[i] = m[i] * a.beta1;
        m[i] = add_alpha(m[i], a.one_minus_beta1, grad);
        v[i] = v[i] * a.beta2;
        v[i] = addcmul(v[i], a.one_minus_beta2, grad, grad);
        T second = v[i];
        if (a.amsgrad) {
            vmax[i] = std::max(vmax[i], v[i]);
            second = vmax[i];
        }
        const T denom = std::sqrt(second) / a.bias_correction2_sqrt + a.eps;
        p[i] = p[i] + a.neg_step_size * m[i] / denom;
    }
}

template <typename T> struct RmsArgs {
    T alpha, one_minus_alpha, eps, weight_decay, momentum, neg_lr;
    bool centered, maximize;
};
template <typename T>
void rmsprop_kernel(T* __restrict p, const T* __restrict g, T* __restrict sq, T* __restrict ga,
                    T* __restrict buf, int64_t n, const RmsArgs<T>& a) {
    for (int64_t i = 0; i < n; ++i) {
        T grad = a.maximize ? -g[i] : g[i];
        if (a.weight_decay != T(0)) grad = add_alpha(grad, a.weight_decay, p[i]);
        sq[i] = sq[i] * a.alpha;
        sq[i] = addcmul(sq[i], a.one_minus_alpha, grad, grad);
        T avg;
        if (a.centered) {
            ga[i] = ga[i] * a.alpha;
            ga[i] = add_alpha(ga[i], a.one_minus_alpha, grad);
            avg = std::sqrt(addcmul(sq[i], T(-1), ga[i], ga[i]));
        } else {
            avg = std::sqrt(sq[i]);
        }
        avg = avg + a.eps;
        if (buf) {
            buf[i] = buf[i] * a.momentum;
            buf[i] = buf[i] + T(1) * grad / avg;
            p[i] = add_alpha(p[i], a.neg_lr, buf[i]);
        } else {
            p[i] = p[i] + a.neg_lr * grad / avg;
        }
    }
}

template <typename T> struct AdagradArgs {
    T weight_decay, eps, neg_clr;
    bool maximize;
};
template <typename T>
void adagrad_kernel(T* __restrict p, const T* __restrict g, T* __restrict sum, int64_t n,
                    const AdagradArgs<T>& a) {
    for (int64_t i = 0; i < n; ++i) {
        T grad = a.maximize ? -g[i] : g[i];
        if (a.weight_decay != T(0)) grad = add_alpha(grad, a.weight_decay, p[i]);
        sum[i] = addcmul(sum[i], T(1), grad, grad);
        const T std_ = std::sqrt(sum[i]) + a.eps;
        p[i] = p[i] + a.neg_clr * grad / std_;
    }
}

template <typename T> T* ptr(Tensor& t) {
    return t.defined() ? t.data<T>() : nullptr;
}

// Makes a state tensor contiguous in the parameter's dtype (after load_state_dict).
Tensor& normalized(Tensor& t, const Tensor& like) {
    if (t.dtype() != like.dtype() || !t.is_contiguous()) t = t.to(like.dtype()).contiguous();
    return t;
}

} // namespace

// --- SGD -------------------------------------------------------------------------------------
Options SGDOptions::to_map() const {
    return {{"lr", lr},
            {"momentum", momentum},
            {"dampening", dampening},
            {"weight_decay", weight_decay},
            {"nesterov", nesterov ? 1.0 : 0.0},
            {"maximize", maximize ? 1.0 : 0.0}};
}

SGD::SGD(std::vector<Tensor> params, const SGDOptions& options)
    : SGD(std::vector<ParamGroup>{ParamGroup{std::move(params), {}}}, options) {}
SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& options)
    : Optimizer(std::move(groups), options.to_map()) {
    finish_construction();
}

void SGD::check_options(const Options& o) const {
    check_nonneg("learning rate", value(o, "lr"));
    check_nonneg("momentum value", value(o, "momentum"));
    check_nonneg("weight_decay value", value(o, "weight_decay"));
    if (flag(o, "nesterov") && (value(o, "momentum") <= 0.0 || value(o, "dampening") != 0.0))
        throw Error("SGD: Nesterov momentum requires a momentum and zero dampening");
}

void SGD::step_group(ParamGroup& group, std::vector<ParamState>& state) {
    const Options& o = group.options;
    const double lr = value(o, "lr"), momentum = value(o, "momentum");
    const double dampening = value(o, "dampening"), wd = value(o, "weight_decay");
    const bool nesterov = flag(o, "nesterov"), maximize = flag(o, "maximize");
    for (size_t i = 0; i < group.params.size(); ++i) {
        Slot s = prepare("SGD", group.params[i]);
        if (!s.valid()) continue;
        ParamState& st = state[i];
        Tensor buf;
        bool first = false;
        if (momentum != 0.0) {
            first = !st.count("momentum_buffer");
            state_tensor(st, "momentum_buffer", s.work);
            buf = normalized(st["momentum_buffer"], s.work);
        }
        const int64_t n = s.work.numel();
        if (s.work.dtype() == DType::Float64) {
            SgdArgs<double> a{lr, momentum, 1.0 - dampening, wd, nesterov, maximize, first};
            double *w = s.work.data<double>(), *b = ptr<double>(buf);
            const double* g = s.grad.data<double>();
            run_kernel([&] {
                run_update(w, g, n, stats_slot(s.param), [&](int64_t i, int64_t len) {
                    sgd_kernel<double>(w + i, g + i, offset(b, i), len, a);
                });
            });
        } else {
            SgdArgs<float> a{static_cast<float>(lr),
                             static_cast<float>(momentum),
                             static_cast<float>(1.0 - dampening),
                             static_cast<float>(wd),
                             nesterov,
                             maximize,
                             first};
            float *w = s.work.data<float>(), *b = ptr<float>(buf);
            const float* g = s.grad.data<float>();
            run_kernel([&] {
                run_update(w, g, n, stats_slot(s.param), [&](int64_t i, int64_t len) {
                    sgd_kernel<float>(w + i, g + i, offset(b, i), len, a);
                });
            });
        }
        s.commit();
    }
}

// --- Adam / AdamW ----------------------------------------------------------------------------
Options AdamOptions::to_map() const {
    return {{"lr", lr},
            {"beta1", beta1},
            {"beta2", beta2},
            {"eps", eps},
            {"weight_decay", weight_decay},
            {"amsgrad", amsgrad ? 1.0 : 0.0},
            {"maximize", maximize ? 1.0 : 0.0}};
}

Adam::Adam(std::vector<Tensor> params, const AdamOptions& options)
    : Adam(std::vector<ParamGroup>{ParamGroup{std::move(params), {}}}, options, false) {}
Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& options)
    : Adam(std::move(groups), options, false) {}
Adam::Adam(std::vector<ParamGroup> groups, const AdamOptions& options, bool decoupled)
    : Optimizer(std::move(groups), options.to_map()), decoupled_(decoupled) {
    finish_construction();
}

AdamW::AdamW(std::vector<Tensor> params, const AdamOptions& options)
    : Adam(std::vector<ParamGroup>{ParamGroup{std::move(params), {}}}, options, true) {}
AdamW::AdamW(std::vector<ParamGroup> groups, const AdamOptions& options)
    : Adam(std::move(groups), options, true) {}

void Adam::check_options(const Options& o) const {
    check_nonneg("learning rate", value(o, "lr"));
    check_nonneg("epsilon value", value(o, "eps"));
    check_nonneg("weight_decay value", value(o, "weight_decay"));
    for (const char* b : {"beta1", "beta2"}) {
        const double v = value(o, b);
        if (!(v >= 0.0 && v < 1.0))
            throw Error(std::string("Invalid ") + b + " parameter: " + std::to_string(v) +
                        " (expected [0, 1))");
    }
}

void Adam::step_group(ParamGroup& group, std::vector<ParamState>& state) {
    const Options& o = group.options;
    const double lr = value(o, "lr"), beta1 = value(o, "beta1"), beta2 = value(o, "beta2");
    const double eps = value(o, "eps"), wd = value(o, "weight_decay");
    const bool amsgrad = flag(o, "amsgrad"), maximize = flag(o, "maximize");
    for (size_t i = 0; i < group.params.size(); ++i) {
        Slot s = prepare(name(), group.params[i]);
        if (!s.valid()) continue;
        ParamState& st = state[i];
        const double step = increment_step(st);
        state_tensor(st, "exp_avg", s.work);
        state_tensor(st, "exp_avg_sq", s.work);
        Tensor m = normalized(st["exp_avg"], s.work);
        Tensor v = normalized(st["exp_avg_sq"], s.work);
        Tensor vmax;
        if (amsgrad) {
            state_tensor(st, "max_exp_avg_sq", s.work);
            vmax = normalized(st["max_exp_avg_sq"], s.work);
        }
        // Python float math, as PyTorch: bias corrections and the step size in double.
        const double bias_correction1 = 1.0 - std::pow(beta1, step);
        const double bias_correction2 = 1.0 - std::pow(beta2, step);
        const double step_size = lr / bias_correction1;
        const double bc2_sqrt = std::sqrt(bias_correction2);
        const double decay = 1.0 - lr * wd;
        const int64_t n = s.work.numel();
        if (s.work.dtype() == DType::Float64) {
            AdamArgs<double> a{beta1, 1.0 - beta1, beta2,      1.0 - beta2, eps,     wd,
                               decay, bc2_sqrt,    -step_size, decoupled_,  amsgrad, maximize};
            double *w = s.work.data<double>(), *mp = m.data<double>(), *vp = v.data<double>();
            double* vm = ptr<double>(vmax);
            const double* g = s.grad.data<double>();
            run_kernel([&] {
                run_update(w, g, n, stats_slot(s.param), [&](int64_t i, int64_t len) {
                    adam_kernel<double>(w + i, g + i, mp + i, vp + i, offset(vm, i), len, a);
                });
            });
        } else {
            AdamArgs<float> a{static_cast<float>(beta1),
                              static_cast<float>(1.0 - beta1),
                              static_cast<float>(beta2),
                              static_cast<float>(1.0 - beta2),
                              static_cast<float>(eps),
                              static_cast<float>(wd),
                              static_cast<float>(decay),
                              static_cast<float>(bc2_sqrt),
                              static_cast<float>(-step_size),
                              decoupled_,
                              amsgrad,
                              maximize};
            float *w = s.work.data<float>(), *mp = m.data<float>(), *vp = v.data<float>();
            float* vm = ptr<float>(vmax);
            const float* g = s.grad.data<float>();
            run_kernel([&] {
                run_update(w, g, n, stats_slot(s.param), [&](int64_t i, int64_t len) {
                    adam_kernel<float>(w + i, g + i, mp + i, vp + i, offset(vm, i), len, a);
                });
            });
        }
        s.commit();
    }
}

// --- RMSprop ---------------------------------------------------------------------------------
Options RMSpropOptions::to_map() const {
    return {{"lr", lr},
            {"alpha", alpha},
            {"eps", eps},
            {"weight_decay", weight_decay},
            {"momentum", momentum},
            {"centered", centered ? 1.0 : 0.0},
            {"maximize", maximize ? 1.0 : 0.0}};
}

RMSprop::RMSprop(std::vector<Tensor> params, const RMSpropOptions& options)
    : RMSprop(std::vector<ParamGroup>{ParamGroup{std::move(params), {}}}, options) {}
RMSprop::RMSprop(std::vector<ParamGroup> groups, const RMSpropOptions& options)
    : Optimizer(std::move(groups), options.to_map()) {
    finish_construction();
}

void RMSprop::check_options(const Options& o) const {
    check_nonneg("learning rate", value(o, "lr"));
    check_nonneg("epsilon value", value(o, "eps"));
    check_nonneg("momentum value", value(o, "momentum"));
    check_nonneg("weight_decay value", value(o, "weight_decay"));
    check_nonneg("alpha value", value(o, "alpha"));
}

void RMSprop::step_group(ParamGroup& group, std::vector<ParamState>& state) {
    const Options& o = group.options;
    const double lr = value(o, "lr"), alpha = value(o, "alpha"), eps = value(o, "eps");
    const double wd = value(o, "weight_decay"), momentum = value(o, "momentum");
    const bool centered = flag(o, "centered"), maximize = flag(o, "maximize");
    for (size_t i = 0; i < group.params.size(); ++i) {
        Slot s = prepare("RMSprop", group.params[i]);
        if (!s.valid()) continue;
        ParamState& st = state[i];
        increment_step(st);
        state_tensor(st, "square_avg", s.work);
        Tensor sq = normalized(st["square_avg"], s.work);
        Tensor buf, ga;
        if (momentum > 0.0) {
            state_tensor(st, "momentum_buffer", s.work);
            buf = normalized(st["momentum_buffer"], s.work);
        }
        if (centered) {
            state_tensor(st, "grad_avg", s.work);
            ga = normalized(st["grad_avg"], s.work);
        }
        const int64_t n = s.work.numel();
        if (s.work.dtype() == DType::Float64) {
            RmsArgs<double> a{alpha, 1.0 - alpha, eps, wd, momentum, -lr, centered, maximize};
            double *w = s.work.data<double>(), *sp = sq.data<double>();
            double *gap = ptr<double>(ga), *b = ptr<double>(buf);
            const double* g = s.grad.data<double>();
            run_kernel([&] {
                run_update(w, g, n, stats_slot(s.param), [&](int64_t i, int64_t len) {
                    rmsprop_kernel<double>(w + i, g + i, sp + i, offset(gap, i), offset(b, i), len,
                                           a);
                });
            });
        } else {
            RmsArgs<float> a{static_cast<float>(alpha),
                             static_cast<float>(1.0 - alpha),
                             static_cast<float>(eps),
                             static_cast<float>(wd),
                             static_cast<float>(momentum),
                             static_cast<float>(-lr),
                             centered,
                             maximize};
            float *w = s.work.data<float>(), *sp = sq.data<float>();
            float *gap = ptr<float>(ga), *b = ptr<float>(buf);
            const float* g = s.grad.data<float>();
            run_kernel([&] {
                run_update(w, g, n, stats_slot(s.param), [&](int64_t i, int64_t len) {
                    rmsprop_kernel<float>(w + i, g + i, sp + i, offset(gap, i), offset(b, i), len,
                                          a);
                });
            });
        }
        s.commit();
    }
}

// --- Adagrad ---------------------------------------------------------------------------------
Options AdagradOptions::to_map() const {
    return {{"lr", lr},
            {"lr_decay", lr_decay},
            {"weight_decay", weight_decay},
            {"initial_accumulator_value", initial_accumulator_value},
            {"eps", eps},
            {"maximize", maximize ? 1.0 : 0.0}};
}

Adagrad::Adagrad(std::vector<Tensor> params, const AdagradOptions& options)
    : Adagrad(std::vector<ParamGroup>{ParamGroup{std::move(params), {}}}, options) {}
Adagrad::Adagrad(std::vector<ParamGroup> groups, const AdagradOptions& options)
    : Optimizer(std::move(groups), options.to_map()) {
    finish_construction();
}

void Adagrad::check_options(const Options& o) const {
    check_nonneg("learning rate", value(o, "lr"));
    check_nonneg("lr_decay value", value(o, "lr_decay"));
    check_nonneg("weight_decay value", value(o, "weight_decay"));
    check_nonneg("initial_accumulator_value value", value(o, "initial_accumulator_value"));
    check_nonneg("epsilon value", value(o, "eps"));
}

// PyTorch creates Adagrad's state for every parameter at construction.
void Adagrad::init_state(const ParamGroup& group, const Tensor& param, ParamState& state) {
    state["step"] = zeros({}, TensorOptions(DType::Float32));
    state["sum"] = full(param.shape(), value(group.options, "initial_accumulator_value"),
                        TensorOptions(param.dtype()));
}

void Adagrad::step_group(ParamGroup& group, std::vector<ParamState>& state) {
    const Options& o = group.options;
    const double lr = value(o, "lr"), lr_decay = value(o, "lr_decay");
    const double wd = value(o, "weight_decay"), eps = value(o, "eps");
    const bool maximize = flag(o, "maximize");
    for (size_t i = 0; i < group.params.size(); ++i) {
        Slot s = prepare("Adagrad", group.params[i]);
        if (!s.valid()) continue;
        ParamState& st = state[i];
        const double step = increment_step(st);
        state_tensor(st, "sum", s.work, value(o, "initial_accumulator_value"));
        Tensor sum = normalized(st["sum"], s.work);
        const double clr = lr / (1.0 + (step - 1.0) * lr_decay);
        const int64_t n = s.work.numel();
        if (s.work.dtype() == DType::Float64) {
            AdagradArgs<double> a{wd, eps, -clr, maximize};
            double *w = s.work.data<double>(), *sp = sum.data<double>();
            const double* g = s.grad.data<double>();
            run_kernel([&] {
                run_update(w, g, n, stats_slot(s.param), [&](int64_t i, int64_t len) {
                    adagrad_kernel<double>(w + i, g + i, sp + i, len, a);
                });
            });
        } else {
            AdagradArgs<float> a{static_cast<float>(wd), static_cast<float>(eps),
                                 static_cast<float>(-clr), maximize};
            float *w = s.work.data<float>(), *sp = sum.data<float>();
            const float* g = s.grad.data<float>();
            run_kernel([&] {
                run_update(w, g, n, stats_slot(s.param), [&](int64_t i, int64_t len) {
                    adagrad_kernel<float>(w + i, g + i, sp + i, len, a);
                });
            });
        }
        s.commit();
    }
}

} // namespace myelin::optim
