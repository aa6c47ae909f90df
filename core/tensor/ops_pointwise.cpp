// Element-wise ops: broadcasting, type promotion, kernels through the backend table, and the
// backward rules (kept together here, written with the same ops).
#include "autograd/function.h"
#include "tensor/tensor_impl.h"

#include <cmath>

namespace myelin {

using autograd::Node;
using autograd::record;
using autograd::SavedTensor;
using backend::BinaryOp;
using backend::OpParams;
using backend::UnaryOp;
using namespace detail;

Dims broadcast_shapes(const Dims& a, const Dims& b) {
    const int n = std::max(a.size(), b.size());
    Dims out = Dims::filled(n, 1);
    for (int i = 0; i < n; ++i) {
        const int ia = a.size() - n + i, ib = b.size() - n + i;
        const int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1)
            throw ShapeError("the size of tensor a (" + std::to_string(sa) +
                             ") must match the size of tensor b (" + std::to_string(sb) +
                             ") at non-singleton dimension " + std::to_string(i) + " (shapes " +
                             a.str() + " and " + b.str() + ")");
        out[i] = sa == 1 ? sb : sa;
    }
    return out;
}

namespace detail {

static Dims broadcast_for(const char* op, const Dims& a, const Dims& b) {
    try {
        return broadcast_shapes(a, b);
    } catch (const ShapeError& e) {
        throw ShapeError(std::string(op) + ": " + e.what());
    }
}

// PyTorch's result_type for two tensors: a 0-dim tensor does not promote a dimensioned one
// within the same category (bool < integer < floating).
DType result_type(const Tensor& a, const Tensor& b) {
    const auto category = [](DType t) { return t == DType::Bool ? 0 : is_floating(t) ? 2 : 1; };
    if (a.dim() == 0 && b.dim() > 0 && category(a.dtype()) <= category(b.dtype())) return b.dtype();
    if (b.dim() == 0 && a.dim() > 0 && category(b.dtype()) <= category(a.dtype())) return a.dtype();
    return promote_types(a.dtype(), b.dtype());
}

DType scalar_result_type(DType t, double s) {
    if (is_floating(t)) return t;
    if (std::floor(s) == s && std::isfinite(s)) return DType::Int64;
    return DType::Float32;
}

Tensor binary_raw(const char* name, BinaryOp op, const Tensor& a, const Tensor& b, DType compute,
                  DType out_dtype, OpParams p) {
    check_same_device(a, b, name);
    const Dims shape = broadcast_for(name, a.shape(), b.shape());
    const Tensor ac = a.dtype() == compute ? a : raw_convert(a, compute);
    const Tensor bc = b.dtype() == compute ? b : raw_convert(b, compute);
    const bool compare = op >= BinaryOp::Eq && op <= BinaryOp::Ge;
    Tensor out = make_tensor(shape, compare ? DType::Bool : compute, a.device());
    backend_for(a).binary(op, broadcast_view(ac, shape), broadcast_view(bc, shape), view_of(out),
                          p);
    return out.dtype() == out_dtype ? out : raw_convert(out, out_dtype);
}

Tensor unary_raw(UnaryOp op, const Tensor& x, DType compute, DType out_dtype, OpParams p) {
    const Tensor xc = x.dtype() == compute ? x : raw_convert(x, compute);
    const bool predicate = op == UnaryOp::IsFinite || op == UnaryOp::LogicalNot;
    Tensor out = make_tensor(x.shape(), predicate ? DType::Bool : compute, x.device());
    backend_for(x).unary(op, predicate ? view_of(x) : view_of(xc), view_of(out), p);
    return out.dtype() == out_dtype ? out : raw_convert(out, out_dtype);
}

// g op saved (same dtype as g), for backward rules.
static Tensor grad_binary(BinaryOp op, const Tensor& g, const Tensor& saved, OpParams p = {}) {
    return binary_raw("backward", op, g,
                      saved.dtype() == g.dtype() ? saved : raw_convert(saved, g.dtype()),
                      compute_dtype(g.dtype()), g.dtype(), p);
}

} // namespace detail

// --- binary ops
// ------------------------------------------------------------------------------------

namespace {

// What backward needs to hand an input its gradient: undo broadcasting, then cast back to the
// input's dtype (a float32 input of a float64 op gets a float32 gradient, as in PyTorch).
struct InputMeta {
    Dims shape;
    DType dtype;
};
Tensor reduce_grad(const Tensor& g, const InputMeta& in) {
    const Tensor r = sum_to(g, in.shape);
    return r.dtype() == in.dtype ? r : r.to(in.dtype);
}

DType float_result(DType t) {
    return is_floating(t) ? t : DType::Float32;
}

Tensor binary_with_grad(const char* name, const char* node, BinaryOp op, const Tensor& a,
                        const Tensor& b, double alpha = 1.0) {
    DType rt = result_type(a, b);
    if (op == BinaryOp::Div || op == BinaryOp::Pow) rt = float_result(rt);
    Tensor out = binary_raw(name, op, a, b, compute_dtype(rt), rt, {alpha, 0});
    if (!autograd::needs_grad({&a, &b})) return out;
    const InputMeta as{a.shape(), a.dtype()}, bs{b.shape(), b.dtype()};
    switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
        record(node, {&a, &b}, out,
               [as, bs, alpha, sub = op == BinaryOp::Sub](const Tensor& g, const Node& n) {
                   TensorList r(2);
                   if (n.needs_input_grad(0)) r[0] = reduce_grad(g, as);
                   if (n.needs_input_grad(1))
                       r[1] =
                           reduce_grad(alpha == 1.0 && !sub ? g : g * (sub ? -alpha : alpha), bs);
                   return r;
               });
        break;
    case BinaryOp::Mul:
        record(node, {&a, &b}, out,
               [as, bs, sa = SavedTensor(a), sb = SavedTensor(b)](const Tensor& g, const Node& n) {
                   TensorList r(2);
                   if (n.needs_input_grad(0)) r[0] = reduce_grad(g * sb.unpack(n), as);
                   if (n.needs_input_grad(1)) r[1] = reduce_grad(g * sa.unpack(n), bs);
                   return r;
               });
        break;
    case BinaryOp::Div:
        record(node, {&a, &b}, out,
               [as, bs, sa = SavedTensor(a), sb = SavedTensor(b)](const Tensor& g, const Node& n) {
                   TensorList r(2);
                   const Tensor bv = sb.unpack(n);
                   if (n.needs_input_grad(0)) r[0] = reduce_grad(g / bv, as);
                   if (n.needs_input_grad(1)) r[1] = reduce_grad(-g * sa.unpack(n) / (bv * bv), bs);
                   return r;
               });
        break;
    case BinaryOp::Pow:
        record(node, {&a, &b}, out,
               [as, bs, sa = SavedTensor(a), sb = SavedTensor(b),
                so = SavedTensor(out, true)](const Tensor& g, const Node& n) {
                   TensorList r(2);
                   const Tensor av = sa.unpack(n), bv = sb.unpack(n);
                   if (n.needs_input_grad(0)) r[0] = reduce_grad(g * bv * pow(av, bv - 1.0), as);
                   if (n.needs_input_grad(1)) {
                       // d/db a^b = a^b log a, defined as 0 where a == 0 and b >= 0 (PyTorch)
                       const Tensor zero_base =
                           gt(eq(av, 0.0).to(DType::Int64) + ge(bv, 0.0).to(DType::Int64), 1.0);
                       Tensor gb = where(zero_base, zeros_like(g), g * so.unpack(n) * log(av));
                       r[1] = reduce_grad(gb, bs);
                   }
                   return r;
               });
        break;
    case BinaryOp::Maximum:
    case BinaryOp::Minimum:
        record(node, {&a, &b}, out,
               [as, bs, sa = SavedTensor(a), sb = SavedTensor(b),
                is_max = op == BinaryOp::Maximum](const Tensor& g, const Node& n) {
                   const Tensor av = sa.unpack(n), bv = sb.unpack(n);
                   const Tensor a_wins = is_max ? gt(av, bv) : lt(av, bv);
                   const Tensor tie = eq(av, bv);
                   const Tensor half = g * 0.5;
                   TensorList r(2);
                   if (n.needs_input_grad(0))
                       r[0] = reduce_grad(where(tie, half, where(a_wins, g, zeros_like(g))), as);
                   if (n.needs_input_grad(1))
                       r[1] = reduce_grad(where(tie, half, where(a_wins, zeros_like(g), g)), bs);
                   return r;
               });
        break;
    default:
        break;
    }
    return out;
}

// Unary op with a scalar parameter (x + s, x * s, ...).
Tensor scalar_op(UnaryOp op, const Tensor& x, double s, DType rt) {
    return unary_raw(op, x, compute_dtype(rt), rt, {s, 0});
}

} // namespace

Tensor add(const Tensor& a, const Tensor& b, double alpha) {
    return binary_with_grad("add", "AddBackward0", BinaryOp::Add, a, b, alpha);
}
Tensor sub(const Tensor& a, const Tensor& b, double alpha) {
    return binary_with_grad("sub", "SubBackward0", BinaryOp::Sub, a, b, alpha);
}
Tensor mul(const Tensor& a, const Tensor& b) {
    return binary_with_grad("mul", "MulBackward0", BinaryOp::Mul, a, b);
}
Tensor div(const Tensor& a, const Tensor& b) {
    return binary_with_grad("div", "DivBackward0", BinaryOp::Div, a, b);
}
Tensor pow(const Tensor& a, const Tensor& b) {
    return binary_with_grad("pow", "PowBackward1", BinaryOp::Pow, a, b);
}
Tensor maximum(const Tensor& a, const Tensor& b) {
    return binary_with_grad("maximum", "MaximumBackward0", BinaryOp::Maximum, a, b);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
    return binary_with_grad("minimum", "MinimumBackward0", BinaryOp::Minimum, a, b);
}

Tensor add(const Tensor& a, double b) {
    Tensor out = scalar_op(UnaryOp::AddScalar, a, b, scalar_result_type(a.dtype(), b));
    if (autograd::needs_grad({&a}))
        record("AddBackward1", {&a}, out,
               [](const Tensor& g, const Node&) { return TensorList{g}; });
    return out;
}
Tensor sub(const Tensor& a, double b) {
    Tensor out = scalar_op(UnaryOp::AddScalar, a, -b, scalar_result_type(a.dtype(), b));
    if (autograd::needs_grad({&a}))
        record("SubBackward1", {&a}, out,
               [](const Tensor& g, const Node&) { return TensorList{g}; });
    return out;
}
Tensor rsub(const Tensor& a, double b) {
    Tensor out = scalar_op(UnaryOp::RSubScalar, a, b, scalar_result_type(a.dtype(), b));
    if (autograd::needs_grad({&a}))
        record("RsubBackward1", {&a}, out,
               [](const Tensor& g, const Node&) { return TensorList{-g}; });
    return out;
}
Tensor mul(const Tensor& a, double b) {
    Tensor out = scalar_op(UnaryOp::MulScalar, a, b, scalar_result_type(a.dtype(), b));
    if (autograd::needs_grad({&a}))
        record("MulBackward1", {&a}, out,
               [b](const Tensor& g, const Node&) { return TensorList{g * b}; });
    return out;
}
Tensor div(const Tensor& a, double b) {
    const DType rt = float_result(a.dtype());
    // As PyTorch: a true division on the CPU; on CUDA a product with the reciprocal (PyTorch's
    // div_true_kernel_cuda for a CPU scalar), except where the reciprocal is not finite (0, a
    // subnormal), where x * inf would be inf or NaN and x / b is not. div_ chooses the same way.
    const bool by_reciprocal = !a.device().is_cpu() && std::isfinite(1.0 / b);
    Tensor out = by_reciprocal ? scalar_op(UnaryOp::MulScalar, a, 1.0 / b, rt)
                               : scalar_op(UnaryOp::DivScalar, a, b, rt);
    if (autograd::needs_grad({&a}))
        record("DivBackward1", {&a}, out,
               [b](const Tensor& g, const Node&) { return TensorList{g / b}; });
    return out;
}
Tensor pow(const Tensor& a, double e) {
    const DType rt = scalar_result_type(a.dtype(), e);
    Tensor out = e == 2.0 ? unary_raw(UnaryOp::Square, a, compute_dtype(rt), rt)
                          : scalar_op(UnaryOp::PowScalar, a, e, float_result(rt));
    if (autograd::needs_grad({&a}))
        record("PowBackward0", {&a}, out, [e, sa = SavedTensor(a)](const Tensor& g, const Node& n) {
            if (e == 0.0) return TensorList{zeros_like(g)};
            const Tensor x = sa.unpack(n);
            return TensorList{g * (e == 2.0 ? x * 2.0 : pow(x, e - 1.0) * e)};
        });
    return out;
}
Tensor pow(double base, const Tensor& e) {
    const DType rt = float_result(e.dtype());
    Tensor out = scalar_op(UnaryOp::RPowScalar, e, base, rt);
    if (autograd::needs_grad({&e}))
        record("PowBackward2", {&e}, out,
               [base, so = SavedTensor(out, true)](const Tensor& g, const Node& n) {
                   return TensorList{g * so.unpack(n) * std::log(base)};
               });
    return out;
}

// --- unary ops
// ---------------------------------------------------------------------------------------

namespace {

enum class Saves { Input, Output, Nothing };

// A float unary op (integers compute in float32, like PyTorch) with its backward.
template <typename Backward>
Tensor float_unary(UnaryOp op, const char* node, const Tensor& x, Saves saves, Backward&& bw,
                   OpParams p = {}) {
    const DType rt = float_result(x.dtype());
    Tensor out = unary_raw(op, x, compute_dtype(rt), rt, p);
    if (autograd::needs_grad({&x})) {
        SavedTensor saved = saves == Saves::Input    ? SavedTensor(x)
                            : saves == Saves::Output ? SavedTensor(out, true)
                                                     : SavedTensor();
        record(node, {&x}, out, [saved, bw](const Tensor& g, const Node& n) {
            return TensorList{bw(g, saved.unpack(n))};
        });
    }
    return out;
}

// Ops that keep integer dtypes (neg, abs, ...).
template <typename Backward>
Tensor keep_unary(UnaryOp op, const char* node, const Tensor& x, Saves saves, Backward&& bw,
                  OpParams p = {}) {
    const DType rt = is_floating(x.dtype()) ? x.dtype() : DType::Int64;
    Tensor out = unary_raw(op, x, compute_dtype(rt), rt, p);
    if (autograd::needs_grad({&x})) {
        SavedTensor saved = saves == Saves::Input ? SavedTensor(x) : SavedTensor();
        record(node, {&x}, out, [saved, bw](const Tensor& g, const Node& n) {
            return TensorList{bw(g, saved.unpack(n))};
        });
    }
    return out;
}

} // namespace

Tensor neg(const Tensor& x) {
    if (x.dtype() == DType::Bool)
        throw DTypeError("neg: negation of a bool tensor is not supported; use logical_not()");
    return keep_unary(UnaryOp::Neg, "NegBackward0", x, Saves::Nothing,
                      [](const Tensor& g, const Tensor&) { return -g; });
}
Tensor abs(const Tensor& x) {
    return keep_unary(UnaryOp::Abs, "AbsBackward0", x, Saves::Input,
                      [](const Tensor& g, const Tensor& v) { return g * sign(v); });
}
Tensor sign(const Tensor& x) {
    return keep_unary(UnaryOp::Sign, "SignBackward0", x, Saves::Nothing,
                      [](const Tensor& g, const Tensor&) { return zeros_like(g); });
}
Tensor square(const Tensor& x) {
    return pow(x, 2.0);
}
Tensor reciprocal(const Tensor& x) {
    return float_unary(UnaryOp::Reciprocal, "ReciprocalBackward0", x, Saves::Output,
                       [](const Tensor& g, const Tensor& y) { return -g * y * y; });
}
Tensor exp(const Tensor& x) {
    return float_unary(UnaryOp::Exp, "ExpBackward0", x, Saves::Output,
                       [](const Tensor& g, const Tensor& y) { return g * y; });
}
Tensor log(const Tensor& x) {
    return float_unary(UnaryOp::Log, "LogBackward0", x, Saves::Input,
                       [](const Tensor& g, const Tensor& v) { return g / v; });
}
Tensor log1p(const Tensor& x) {
    return float_unary(UnaryOp::Log1p, "Log1PBackward0", x, Saves::Input,
                       [](const Tensor& g, const Tensor& v) { return g / (v + 1.0); });
}
Tensor sqrt(const Tensor& x) {
    return float_unary(UnaryOp::Sqrt, "SqrtBackward0", x, Saves::Output,
                       [](const Tensor& g, const Tensor& y) { return g / (y * 2.0); });
}
Tensor rsqrt(const Tensor& x) {
    return float_unary(UnaryOp::Rsqrt, "RsqrtBackward0", x, Saves::Output,
                       [](const Tensor& g, const Tensor& y) { return g * y * y * y * -0.5; });
}
Tensor sin(const Tensor& x) {
    return float_unary(UnaryOp::Sin, "SinBackward0", x, Saves::Input,
                       [](const Tensor& g, const Tensor& v) { return g * cos(v); });
}
Tensor cos(const Tensor& x) {
    return float_unary(UnaryOp::Cos, "CosBackward0", x, Saves::Input,
                       [](const Tensor& g, const Tensor& v) { return -g * sin(v); });
}
Tensor tanh(const Tensor& x) {
    return float_unary(
        UnaryOp::Tanh, "TanhBackward0", x, Saves::Output,
        [](const Tensor& g, const Tensor& y) { return grad_binary(BinaryOp::TanhBackward, g, y); });
}
Tensor sigmoid(const Tensor& x) {
    return float_unary(UnaryOp::Sigmoid, "SigmoidBackward0", x, Saves::Output,
                       [](const Tensor& g, const Tensor& y) {
                           return grad_binary(BinaryOp::SigmoidBackward, g, y);
                       });
}
Tensor relu(const Tensor& x) {
    return keep_unary(
        UnaryOp::Relu, "ReluBackward0", x, Saves::Input,
        [](const Tensor& g, const Tensor& v) { return grad_binary(BinaryOp::ReluBackward, g, v); });
}
Tensor leaky_relu(const Tensor& x, double slope) {
    return float_unary(UnaryOp::LeakyRelu, "LeakyReluBackward0", x, Saves::Input,
                       [slope](const Tensor& g, const Tensor& v) {
                           return grad_binary(BinaryOp::LeakyReluBackward, g, v, {slope, 0});
                       },
                       {slope, 0});
}
Tensor elu(const Tensor& x, double alpha) {
    return float_unary(UnaryOp::Elu, "EluBackward0", x, Saves::Input,
                       [alpha](const Tensor& g, const Tensor& v) {
                           return grad_binary(BinaryOp::EluBackward, g, v, {alpha, 0});
                       },
                       {alpha, 0});
}
Tensor gelu(const Tensor& x, std::string_view approximate) {
    if (approximate != "none" && approximate != "tanh")
        throw Error("gelu: approximate must be \"none\" or \"tanh\", got \"" +
                    std::string(approximate) + "\"");
    const bool tanh_form = approximate == "tanh";
    return float_unary(tanh_form ? UnaryOp::GeluTanh : UnaryOp::Gelu, "GeluBackward0", x,
                       Saves::Input, [tanh_form](const Tensor& g, const Tensor& v) {
                           return grad_binary(tanh_form ? BinaryOp::GeluTanhBackward
                                                        : BinaryOp::GeluBackward,
                                              g, v);
                       });
}
Tensor silu(const Tensor& x) {
    return float_unary(
        UnaryOp::Silu, "SiluBackward0", x, Saves::Input,
        [](const Tensor& g, const Tensor& v) { return grad_binary(BinaryOp::SiluBackward, g, v); });
}
Tensor softplus(const Tensor& x, double beta, double threshold) {
    return float_unary(UnaryOp::Softplus, "SoftplusBackward0", x, Saves::Input,
                       [beta, threshold](const Tensor& g, const Tensor& v) {
                           return grad_binary(BinaryOp::SoftplusBackward, g, v, {beta, threshold});
                       },
                       {beta, threshold});
}
Tensor clamp(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
    if (!lo && !hi) throw Error("clamp: at least one of min or max must be given");
    const double a = lo.value_or(-INFINITY), b = hi.value_or(INFINITY);
    return keep_unary(UnaryOp::Clamp, "ClampBackward1", x, Saves::Input,
                      [a, b](const Tensor& g, const Tensor& v) {
                          const Tensor inside =
                              logical_not(logical_not(ge(v, a)) + logical_not(le(v, b)));
                          return where(inside, g, zeros_like(g));
                      },
                      {a, b});
}

// --- comparisons and predicates
// --------------------------------------------------------------------

namespace {
Tensor compare(const char* name, BinaryOp op, const Tensor& a, const Tensor& b) {
    const DType ct = compute_dtype(result_type(a, b));
    return binary_raw(name, op, a, b, ct, DType::Bool);
}
Tensor compare(const char* name, BinaryOp op, const Tensor& a, double s) {
    const DType ct = compute_dtype(scalar_result_type(a.dtype(), s));
    Tensor st = make_tensor({}, ct, a.device());
    backend_for(a).fill(view_of(st), s);
    return binary_raw(name, op, a, st, ct, DType::Bool);
}
} // namespace

Tensor eq(const Tensor& a, const Tensor& b) {
    return compare("eq", BinaryOp::Eq, a, b);
}
Tensor ne(const Tensor& a, const Tensor& b) {
    return compare("ne", BinaryOp::Ne, a, b);
}
Tensor lt(const Tensor& a, const Tensor& b) {
    return compare("lt", BinaryOp::Lt, a, b);
}
Tensor le(const Tensor& a, const Tensor& b) {
    return compare("le", BinaryOp::Le, a, b);
}
Tensor gt(const Tensor& a, const Tensor& b) {
    return compare("gt", BinaryOp::Gt, a, b);
}
Tensor ge(const Tensor& a, const Tensor& b) {
    return compare("ge", BinaryOp::Ge, a, b);
}
Tensor eq(const Tensor& a, double b) {
    return compare("eq", BinaryOp::Eq, a, b);
}
Tensor ne(const Tensor& a, double b) {
    return compare("ne", BinaryOp::Ne, a, b);
}
Tensor lt(const Tensor& a, double b) {
    return compare("lt", BinaryOp::Lt, a, b);
}
Tensor le(const Tensor& a, double b) {
    return compare("le", BinaryOp::Le, a, b);
}
Tensor gt(const Tensor& a, double b) {
    return compare("gt", BinaryOp::Gt, a, b);
}
Tensor ge(const Tensor& a, double b) {
    return compare("ge", BinaryOp::Ge, a, b);
}

Tensor isfinite(const Tensor& x) {
    if (x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16)
        return unary_raw(UnaryOp::IsFinite, raw_convert(x, DType::Float32), DType::Float32,
                         DType::Bool);
    return unary_raw(UnaryOp::IsFinite, x, x.dtype(), DType::Bool);
}
Tensor logical_not(const Tensor& x) {
    if (x.dtype() == DType::Float16 || x.dtype() == DType::BFloat16)
        return unary_raw(UnaryOp::LogicalNot, raw_convert(x, DType::Float32), DType::Float32,
                         DType::Bool);
    return unary_raw(UnaryOp::LogicalNot, x, x.dtype(), DType::Bool);
}

// --- where / masked_fill -------------------------------------------------------------------------

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
    if (cond.dtype() != DType::Bool)
        throw DTypeError(std::string("where: expected condition to be a bool tensor, got ") +
                         dtype_name(cond.dtype()));
    check_same_device(a, b, "where");
    check_same_device(cond, a, "where");
    const DType rt = result_type(a, b);
    const Dims shape =
        broadcast_for("where", broadcast_for("where", cond.shape(), a.shape()), b.shape());
    const Tensor ac = a.dtype() == rt ? a : raw_convert(a, rt);
    const Tensor bc = b.dtype() == rt ? b : raw_convert(b, rt);
    Tensor out = make_tensor(shape, rt, a.device());
    backend_for(a).where(broadcast_view(cond, shape), broadcast_view(ac, shape),
                         broadcast_view(bc, shape), view_of(out));
    if (autograd::needs_grad({&a, &b}))
        record("WhereBackward0", {&a, &b}, out,
               [c = cond, as = InputMeta{a.shape(), a.dtype()},
                bs = InputMeta{b.shape(), b.dtype()}](const Tensor& g, const Node& n) {
                   TensorList r(2);
                   const Tensor z = zeros({}, g.options());
                   if (n.needs_input_grad(0)) r[0] = reduce_grad(where(c, g, z), as);
                   if (n.needs_input_grad(1)) r[1] = reduce_grad(where(c, z, g), bs);
                   return r;
               });
    return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
    if (mask.dtype() != DType::Bool)
        throw DTypeError(std::string("masked_fill: expected a bool mask, got ") +
                         dtype_name(mask.dtype()));
    const Dims shape = broadcast_for("masked_fill", x.shape(), mask.shape());
    if (!(shape == x.shape()))
        throw ShapeError("masked_fill: mask of shape " + mask.shape().str() +
                         " cannot be broadcast to the input's shape " + x.shape().str());
    Tensor v = make_tensor({}, x.dtype(), x.device());
    backend_for(x).fill(view_of(v), value);
    Tensor out;
    {
        autograd::NoGradGuard no_grad;
        out = where(mask, v, x);
    }
    if (autograd::needs_grad({&x}))
        record("MaskedFillBackward0", {&x}, out, [mask](const Tensor& g, const Node&) {
            return TensorList{where(mask, zeros({}, g.options()), g)};
        });
    return out;
}

// --- operators
// ---------------------------------------------------------------------------------------

Tensor operator+(const Tensor& a, const Tensor& b) {
    return add(a, b);
}
Tensor operator-(const Tensor& a, const Tensor& b) {
    return sub(a, b);
}
Tensor operator*(const Tensor& a, const Tensor& b) {
    return mul(a, b);
}
Tensor operator/(const Tensor& a, const Tensor& b) {
    return div(a, b);
}
Tensor operator+(const Tensor& a, double b) {
    return add(a, b);
}
Tensor operator-(const Tensor& a, double b) {
    return sub(a, b);
}
Tensor operator*(const Tensor& a, double b) {
    return mul(a, b);
}
Tensor operator/(const Tensor& a, double b) {
    return div(a, b);
}
Tensor operator+(double a, const Tensor& b) {
    return add(b, a);
}
Tensor operator-(double a, const Tensor& b) {
    return rsub(b, a);
}
Tensor operator*(double a, const Tensor& b) {
    return mul(b, a);
}
Tensor operator/(double a, const Tensor& b) {
    const DType rt = float_result(b.dtype());
    Tensor out = unary_raw(UnaryOp::RDivScalar, b, compute_dtype(rt), rt, {a, 0});
    if (autograd::needs_grad({&b}))
        record(
            "DivBackward0", {&b}, out,
            [a, so = SavedTensor(out, true), sb = SavedTensor(b)](const Tensor& g, const Node& n) {
                const Tensor x = sb.unpack(n);
                return TensorList{-g * a / (x * x)};
            });
    return out;
}
Tensor operator-(const Tensor& a) {
    return neg(a);
}
Tensor& operator+=(Tensor& a, const Tensor& b) {
    return a.add_(b);
}
Tensor& operator-=(Tensor& a, const Tensor& b) {
    return a.sub_(b);
}
Tensor& operator*=(Tensor& a, const Tensor& b) {
    return a.mul_(b);
}
Tensor& operator/=(Tensor& a, const Tensor& b) {
    return a.div_(b);
}

// Method forms.
Tensor Tensor::exp() const {
    return myelin::exp(*this);
}
Tensor Tensor::log() const {
    return myelin::log(*this);
}
Tensor Tensor::abs() const {
    return myelin::abs(*this);
}
Tensor Tensor::sqrt() const {
    return myelin::sqrt(*this);
}
Tensor Tensor::neg() const {
    return myelin::neg(*this);
}
Tensor Tensor::relu() const {
    return myelin::relu(*this);
}
Tensor Tensor::sigmoid() const {
    return myelin::sigmoid(*this);
}
Tensor Tensor::tanh() const {
    return myelin::tanh(*this);
}
Tensor Tensor::pow(double e) const {
    return myelin::pow(*this, e);
}

} // namespace myelin
