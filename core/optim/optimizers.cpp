// SGD, Adam/AdamW, RMSprop, Adagrad. Each parameter update is one fused kernel of the device's
// training table (backend/train_kernels.h; the math in backend/kernels/optim_update.h) that
// performs PyTorch 1.13's single-tensor ops element by element in the same order and precision
// (scalars rounded to the parameter's dtype, like PyTorch's CPU kernels), so trajectories agree
// to float32 rounding. This file computes the scalars (Python float math, in double) and keeps
// the state; it never reads a tensor's memory, so the step runs on any device.
#include <myelin/error.h>
#include <myelin/optim/optim.h>

#include "backend/train_kernels.h"
#include "tensor/tensor_impl.h"

#include <algorithm>
#include <cmath>
#include <string>

// The scalars follow Python's float math: no contraction of a * b + c into an FMA
// (core/CMakeLists.txt compiles this file with -ffp-contract=off).

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
        it = st.emplace(key, full(like.shape(), fill,
                                  TensorOptions(like.dtype()).with_device(like.device())))
                 .first;
    return it->second;
}

// PyTorch's step counter: a 0-dim float32 tensor incremented before the update.
double increment_step(ParamState& st) {
    auto it = st.find("step");
    if (it == st.end()) it = st.emplace("step", zeros({}, TensorOptions(DType::Float32))).first;
    Tensor& t = it->second;
    // On the host, as PyTorch keeps it (a resumed run may have moved it to the device).
    if (!t.device().is_cpu()) t = t.to(kCPU);
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

// The device's training table for `work` (the CPU's runs the fused loops; a GPU's its kernels).
backend::TrainKernels& table(const Tensor& work) {
    return backend::train_kernels(myelin::detail::backend_for(work),
                                  backend::Primitive::OptimizerStep, work.dtype());
}

// The trainer's statistics for this parameter: where the kernel writes them (null: none asked
// for). The row lives on the parameter's device; Optimizer::step reads all rows at once.
struct StatsOut {
    backend::UpdateStatsOut out;
    bool wanted;
    StatsOut(const Tensor& row, bool grad_squares_only) : wanted(row.defined()) {
        if (wanted) out = {myelin::detail::view_of(row), grad_squares_only};
    }
    const backend::UpdateStatsOut* kernel() const { return wanted ? &out : nullptr; }
};

// The view of an optional state tensor, or null.
const backend::View* view_or_null(const Tensor& t, backend::View& storage) {
    if (!t.defined()) return nullptr;
    storage = myelin::detail::view_of(t);
    return &storage;
}

// Makes a state tensor contiguous in the parameter's dtype (after load_state_dict).
Tensor& normalized(Tensor& t, const Tensor& like) {
    if (t.device() != like.device()) t = t.to(like.device());
    if (t.dtype() != like.dtype() || !t.is_contiguous()) t = t.to(like.dtype()).contiguous();
    return t;
}

} // namespace

constexpr double kInf = std::numeric_limits<double>::infinity();

// --- SGD -------------------------------------------------------------------------------------
const std::array<OptionField<SGDOptions>, 6> SGDOptions::fields{{
    {"lr", &SGDOptions::lr, "Learning rate.", 0.0, kInf, true},
    {"momentum", &SGDOptions::momentum, "Momentum factor.", 0.0},
    {"dampening", &SGDOptions::dampening, "Dampening for momentum.", 0.0},
    {"weight_decay", &SGDOptions::weight_decay, "L2 penalty.", 0.0},
    {"nesterov", &SGDOptions::nesterov, "Nesterov momentum (needs momentum > 0, dampening 0)."},
    {"maximize", &SGDOptions::maximize, "Maximize the objective instead."},
}};

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
        backend::SgdStep a{lr, momentum, 1.0 - dampening, wd, nesterov, maximize, first};
        backend::View b_view;
        const StatsOut stats(stats_row(s.param), stats_grad_squares_only());
        table(s.work).sgd_step(a, myelin::detail::view_of(s.work), myelin::detail::view_of(s.grad),
                               view_or_null(buf, b_view), stats.kernel());
        s.commit();
    }
}

// --- Adam / AdamW ----------------------------------------------------------------------------
const std::array<OptionField<AdamOptions>, 7> AdamOptions::fields{{
    {"lr", &AdamOptions::lr, "Learning rate.", 0.0, kInf, true},
    {"beta1", &AdamOptions::beta1, "Decay of the first moment.", 0.0, 1.0},
    {"beta2", &AdamOptions::beta2, "Decay of the second moment.", 0.0, 1.0},
    {"eps", &AdamOptions::eps, "Added to the denominator.", 0.0},
    {"weight_decay", &AdamOptions::weight_decay,
     "Weight decay: an L2 penalty in Adam, decoupled in AdamW.", 0.0},
    {"amsgrad", &AdamOptions::amsgrad, "Use the AMSGrad variant."},
    {"maximize", &AdamOptions::maximize, "Maximize the objective instead."},
}};

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
        backend::AdamStep a{beta1, 1.0 - beta1, beta2,      1.0 - beta2, eps,     wd,
                            decay, bc2_sqrt,    -step_size, decoupled_,  amsgrad, maximize};
        backend::View vmax_view;
        const StatsOut stats(stats_row(s.param), stats_grad_squares_only());
        table(s.work).adam_step(a, myelin::detail::view_of(s.work), myelin::detail::view_of(s.grad),
                                myelin::detail::view_of(m), myelin::detail::view_of(v),
                                view_or_null(vmax, vmax_view), stats.kernel());
        s.commit();
    }
}

// --- RMSprop ---------------------------------------------------------------------------------
const std::array<OptionField<RMSpropOptions>, 7> RMSpropOptions::fields{{
    {"lr", &RMSpropOptions::lr, "Learning rate.", 0.0, kInf, true},
    {"alpha", &RMSpropOptions::alpha, "Smoothing constant.", 0.0, 1.0},
    {"eps", &RMSpropOptions::eps, "Added to the denominator.", 0.0},
    {"weight_decay", &RMSpropOptions::weight_decay, "L2 penalty.", 0.0},
    {"momentum", &RMSpropOptions::momentum, "Momentum factor.", 0.0},
    {"centered", &RMSpropOptions::centered, "Normalize by the estimated variance."},
    {"maximize", &RMSpropOptions::maximize, "Maximize the objective instead."},
}};

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
        backend::RmspropStep a{alpha, 1.0 - alpha, eps, wd, momentum, -lr, centered, maximize};
        backend::View ga_view, buf_view;
        const StatsOut stats(stats_row(s.param), stats_grad_squares_only());
        table(s.work).rmsprop_step(a, myelin::detail::view_of(s.work),
                                   myelin::detail::view_of(s.grad), myelin::detail::view_of(sq),
                                   view_or_null(ga, ga_view), view_or_null(buf, buf_view),
                                   stats.kernel());
        s.commit();
    }
}

// --- Adagrad ---------------------------------------------------------------------------------
const std::array<OptionField<AdagradOptions>, 6> AdagradOptions::fields{{
    {"lr", &AdagradOptions::lr, "Learning rate.", 0.0, kInf, true},
    {"lr_decay", &AdagradOptions::lr_decay, "Learning rate decay.", 0.0},
    {"weight_decay", &AdagradOptions::weight_decay, "L2 penalty.", 0.0},
    {"initial_accumulator_value", &AdagradOptions::initial_accumulator_value,
     "Start of the accumulator.", 0.0},
    {"eps", &AdagradOptions::eps, "Added to the denominator.", 0.0},
    {"maximize", &AdagradOptions::maximize, "Maximize the objective instead."},
}};

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
                        TensorOptions(param.dtype()).with_device(param.device()));
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
        backend::AdagradStep a{wd, eps, -clr, maximize};
        const StatsOut stats(stats_row(s.param), stats_grad_squares_only());
        table(s.work).adagrad_step(a, myelin::detail::view_of(s.work),
                                   myelin::detail::view_of(s.grad), myelin::detail::view_of(sum),
                                   stats.kernel());
        s.commit();
    }
}

} // namespace myelin::optim
