// Structural layers: reshaping (Flatten, Unflatten, Upsample), merge nodes (Add, Multiply,
// Concat) and the containers (Sequential, ModuleList, ModuleDict).
#include "nn/layers_common.h"

#include <myelin/error.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/layers.h>

namespace myelin::nn {

namespace F = functional;
using namespace detail;

// --- Flatten / Unflatten / Upsample -------------------------------------------------------------

Flatten::Flatten(int start, int end) : Module("Flatten"), start_dim(start), end_dim(end) {}

Tensor Flatten::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    const int n = std::max(x.dim(), 1);
    const int s = start_dim < 0 ? start_dim + n : start_dim;
    const int e = end_dim < 0 ? end_dim + n : end_dim;
    if (s < 0 || s >= n || e < 0 || e >= n || s > e) {
        const int need = std::max(
            {start_dim < 0 ? -start_dim : start_dim + 1, end_dim < 0 ? -end_dim : end_dim + 1, 1});
        bad_input(*this, "a tensor with at least " + std::to_string(need) + " dims", x);
    }
    return x.flatten(start_dim, end_dim);
}

std::string Flatten::extra_repr() const {
    return "start_dim=" + std::to_string(start_dim) + ", end_dim=" + std::to_string(end_dim);
}

Unflatten::Unflatten(int d, Dims sizes) : Module("Unflatten"), dim(d), unflattened_size(sizes) {
    if (sizes.empty()) throw Error("Unflatten: unflattened_size must not be empty");
    int inferred = 0;
    for (int64_t v : sizes) {
        if (v == -1)
            ++inferred;
        else
            require_positive(*this, v, "unflattened_size entries");
    }
    if (inferred > 1) throw Error("Unflatten: only one size can be -1");
}

Tensor Unflatten::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    const int d = dim < 0 ? dim + x.dim() : dim;
    int64_t known = 1;
    bool infer = false;
    for (int64_t v : unflattened_size) {
        if (v == -1)
            infer = true;
        else
            known *= v;
    }
    const bool fits =
        d >= 0 && d < x.dim() && (infer ? x.size(d) % known == 0 : x.size(d) == known);
    if (!fits)
        bad_input(*this,
                  "a tensor whose dim " + std::to_string(dim) + " has " +
                      (infer ? "a multiple of " : "") + std::to_string(known) + " elements",
                  x);
    return x.unflatten(d, unflattened_size);
}

std::string Unflatten::extra_repr() const {
    return "dim=" + std::to_string(dim) + ", unflattened_size=" + dims_tuple(unflattened_size);
}

Upsample::Upsample(Size2 scale, const std::string& mode_, bool align)
    : Module("Upsample"), scale_factor(scale), mode(mode_), align_corners(align) {
    require_positive(*this, std::min(scale.h, scale.w), "scale_factor");
    if (mode != "nearest" && mode != "bilinear")
        throw Error("Upsample: mode '" + mode + "' is not supported ('nearest' or 'bilinear')");
    if (align_corners && mode == "nearest")
        throw Error("Upsample: align_corners can only be set with mode 'bilinear'");
}

Tensor Upsample::forward(const TensorList& inputs) {
    const Tensor& x = inputs[0];
    if (x.dim() != 4) bad_input(*this, "[N, C, H, W]", x);
    if (mode == "bilinear") return F::upsample_bilinear2d(x, scale_factor.arr(), align_corners);
    return F::upsample_nearest2d(x, scale_factor.arr());
}

std::string Upsample::extra_repr() const {
    const std::string s = scale_factor.scalar
                              ? py_float(static_cast<double>(scale_factor.h))
                              : "(" + py_float(static_cast<double>(scale_factor.h)) + ", " +
                                    py_float(static_cast<double>(scale_factor.w)) + ")";
    return "scale_factor=" + s + ", mode=" + mode;
}

// --- merge nodes -------------------------------------------------------------------------------

namespace {
std::string shapes_of(const TensorList& inputs) {
    std::string s;
    for (size_t i = 0; i < inputs.size(); ++i)
        s += (i ? ", " : "") + inputs[i].shape().str();
    return s;
}
void check_broadcastable(const Module& m, const TensorList& inputs) {
    if (inputs.empty()) bad_input(m, "at least one tensor", "no inputs");
    Dims shape = inputs[0].shape();
    for (size_t i = 1; i < inputs.size(); ++i) {
        const Dims& o = inputs[i].shape();
        const int n = std::max(shape.size(), o.size());
        Dims out = Dims::filled(n, 1);
        for (int k = 0; k < n; ++k) {
            const int ia = k - (n - shape.size());
            const int ib = k - (n - o.size());
            const int64_t a = ia >= 0 ? shape[ia] : 1;
            const int64_t b = ib >= 0 ? o[ib] : 1;
            if (a != b && a != 1 && b != 1)
                bad_input(m, "shapes that broadcast together", shapes_of(inputs));
            out[k] = a == 1 ? b : a;
        }
        shape = out;
    }
}
} // namespace

Tensor Add::forward(const TensorList& inputs) {
    check_broadcastable(*this, inputs);
    Tensor out = inputs[0];
    for (size_t i = 1; i < inputs.size(); ++i)
        out = add(out, inputs[i]);
    return out;
}

Tensor Multiply::forward(const TensorList& inputs) {
    check_broadcastable(*this, inputs);
    Tensor out = inputs[0];
    for (size_t i = 1; i < inputs.size(); ++i)
        out = mul(out, inputs[i]);
    return out;
}

Tensor Concat::forward(const TensorList& inputs) {
    if (inputs.empty()) bad_input(*this, "at least one tensor", "no inputs");
    const Tensor& first = inputs[0];
    const int n = first.dim();
    const int d = dim < 0 ? dim + n : dim;
    bool ok = d >= 0 && d < n;
    for (size_t i = 1; ok && i < inputs.size(); ++i) {
        ok = inputs[i].dim() == n;
        for (int k = 0; ok && k < n; ++k)
            ok = k == d || inputs[i].size(k) == first.size(k);
    }
    if (!ok)
        bad_input(*this,
                  "tensors with equal sizes except in dim " + std::to_string(dim) +
                      (d >= 0 && d < n ? "" : " (out of range)"),
                  shapes_of(inputs));
    return cat(inputs, d);
}
std::string Concat::extra_repr() const {
    return "dim=" + std::to_string(dim);
}

// --- containers --------------------------------------------------------------------------------

namespace {
ModulePtr at_index(const Module& m, const std::vector<ModulePtr>& v, int64_t index) {
    const auto n = static_cast<int64_t>(v.size());
    const int64_t i = index < 0 ? index + n : index;
    if (i < 0 || i >= n)
        throw IndexError(m.type_name() + ": index " + std::to_string(index) +
                         " is out of range for " + std::to_string(n) + " modules");
    return v[static_cast<size_t>(i)];
}
} // namespace

Sequential::Sequential(const std::vector<ModulePtr>& modules) : Module("Sequential") {
    for (const auto& m : modules)
        push_back(m);
}

Sequential::Sequential(const std::vector<std::pair<std::string, ModulePtr>>& named)
    : Module("Sequential") {
    for (const auto& [name, m] : named)
        push_back(name, m);
}

void Sequential::push_back(ModulePtr module) {
    push_back(std::to_string(modules_.size()), std::move(module));
}

void Sequential::push_back(const std::string& name, ModulePtr module) {
    add_child(name, module);
    modules_.push_back(std::move(module));
}

ModulePtr Sequential::operator[](int64_t index) const {
    return at_index(*this, modules_, index);
}

int Sequential::num_inputs() const {
    return modules_.empty() ? 1 : modules_[0]->num_inputs();
}

Tensor Sequential::forward(const TensorList& inputs) {
    if (modules_.empty()) return inputs[0];
    Tensor x;
    for (size_t i = 0; i < modules_.size(); ++i) {
        // Conv2d, ReLU (and a 2x2 MaxPool2d) with no hooks: one fused pass, the same bits.
        if (i + 1 < modules_.size() && (i > 0 || inputs.size() == 1)) {
            const Tensor& in = i ? x : inputs[0];
            if (i + 2 < modules_.size()) {
                Tensor fused =
                    fused_conv_relu_pool(*modules_[i], *modules_[i + 1], *modules_[i + 2], in);
                if (fused.defined()) {
                    x = std::move(fused);
                    i += 2;
                    continue;
                }
            }
            Tensor fused = fused_conv_relu(*modules_[i], *modules_[i + 1], in);
            if (fused.defined()) {
                x = std::move(fused);
                ++i;
                continue;
            }
        }
        x = i ? (*modules_[i])(x) : (*modules_[0])(inputs);
    }
    return x;
}

ModuleList::ModuleList(const std::vector<ModulePtr>& modules) : Module("ModuleList") {
    for (const auto& m : modules)
        push_back(m);
}

void ModuleList::push_back(ModulePtr module) {
    add_child(std::to_string(modules_.size()), module);
    modules_.push_back(std::move(module));
}

ModulePtr ModuleList::operator[](int64_t index) const {
    return at_index(*this, modules_, index);
}

Tensor ModuleList::forward(const TensorList&) {
    throw Error("ModuleList has no forward(): call its modules");
}

ModuleDict::ModuleDict(const std::vector<std::pair<std::string, ModulePtr>>& modules)
    : Module("ModuleDict") {
    for (const auto& [k, m] : modules)
        insert(k, m);
}

void ModuleDict::insert(const std::string& key, ModulePtr module) {
    add_child(key, module);
}

ModulePtr ModuleDict::operator[](const std::string& key) const {
    return child(key);
}

bool ModuleDict::contains(const std::string& key) const {
    for (const auto& [k, m] : named_children())
        if (k == key) return true;
    return false;
}

std::vector<std::string> ModuleDict::keys() const {
    std::vector<std::string> out;
    for (const auto& [k, m] : named_children())
        out.push_back(k);
    return out;
}

Tensor ModuleDict::forward(const TensorList&) {
    throw Error("ModuleDict has no forward(): call its modules");
}

} // namespace myelin::nn
