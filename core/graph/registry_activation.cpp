// Layer kinds of the Activations category: element-wise, the input's shape out; Softmax and
// LogSoftmax along a dim.
#include "graph/registry_parts.h"

#include <myelin/graph/registry.h>
#include <myelin/nn/layers.h>

#include <string>

namespace myelin::graph::detail {

namespace {

LayerKind activation(std::string name, std::string doc, double cost, BuildFn build,
                     std::vector<AttrDesc> attrs = {}) {
    LayerKind k = kind(std::move(name), Category::Activation, std::move(doc));
    k.attrs = std::move(attrs);
    for (const auto& a : k.attrs)
        k.summary_attrs.push_back(a.name);
    k.infer = same_as_input;
    k.param_count = no_params;
    k.flops = pointwise(cost);
    k.build = std::move(build);
    return k;
}

} // namespace

void add_activation_kinds(std::vector<LayerKind>& kinds) {
    kinds.push_back(activation("ReLU", "max(0, x).", 1, simple<nn::ReLU>()));
    kinds.push_back(
        activation("ReLU6", "min(max(0, x), 6) (MobileNet's activation).", 1, simple<nn::ReLU6>()));
    kinds.push_back(
        activation("LeakyReLU", "x for x > 0, negative_slope * x otherwise.", 1,
                   [](const Attrs& a) {
                       return std::make_shared<nn::LeakyReLU>(a.get_float("negative_slope"));
                   },
                   {attr::number("negative_slope", 0.01, "Slope for negative inputs.")}));
    {
        LayerKind k = activation(
            "PReLU", "LeakyReLU with a learned slope (one, or one per channel).", 1,
            [](const Attrs& a) {
                return std::make_shared<nn::PReLU>(a.get_int("num_parameters"),
                                                   a.get_float("init"));
            },
            {attr::integer("num_parameters", 1, "1, or the number of channels (dimension 1).", 1),
             attr::number("init", 0.25, "Initial slope.")});
        k.infer = [](const Attrs& a, Inputs in) {
            require_float(in[0]);
            int64_t n = a.get_int("num_parameters");
            if (n > 1 && (in[0].shape.size() < 2 || in[0].shape[1] != n))
                fail("num_parameters=" + std::to_string(n) + " needs input [N, " +
                     std::to_string(n) + ", *], got " + in[0].shape.str());
            return in[0];
        };
        k.param_count = [](const Attrs& a) { return a.get_int("num_parameters"); };
        kinds.push_back(std::move(k));
    }
    kinds.push_back(
        activation("ELU", "x for x > 0, alpha * (exp(x) - 1) otherwise.", 3,
                   [](const Attrs& a) { return std::make_shared<nn::ELU>(a.get_float("alpha")); },
                   {attr::number("alpha", 1.0, "Saturation value for negative inputs.")}));
    kinds.push_back(activation(
        "GELU", "x * Phi(x), the Gaussian error linear unit.", 8,
        [](const Attrs& a) { return std::make_shared<nn::GELU>(a.get_string("approximate")); },
        {attr::choice("approximate", "none", {"none", "tanh"},
                      "Exact (erf) or the tanh approximation.")}));
    kinds.push_back(activation("SiLU", "x * sigmoid(x) (swish).", 4, simple<nn::SiLU>()));
    kinds.push_back(activation("Sigmoid", "1 / (1 + exp(-x)).", 4, simple<nn::Sigmoid>()));
    kinds.push_back(activation("Tanh", "Hyperbolic tangent.", 4, simple<nn::Tanh>()));
    {
        auto softmax_like = [](std::string name, std::string doc, bool log) {
            LayerKind k = activation(
                std::move(name), std::move(doc), 5,
                [log](const Attrs& a) -> std::shared_ptr<nn::Module> {
                    int dim = int(a.get_int("dim"));
                    if (log) return std::make_shared<nn::LogSoftmax>(dim);
                    return std::make_shared<nn::Softmax>(dim);
                },
                {attr::integer("dim", -1, "Dimension the probabilities sum over (-1: the last).",
                               std::nullopt)});
            k.infer = [](const Attrs& a, Inputs in) {
                require_float(in[0]);
                normalize_dim(a.get_int("dim"), in[0].shape.size(), "dim");
                return in[0];
            };
            return k;
        };
        kinds.push_back(softmax_like("Softmax", "exp(x) normalized to sum to 1 along dim.", false));
        kinds.push_back(softmax_like("LogSoftmax", "log(softmax(x)), numerically stable.", true));
    }
    kinds.push_back(activation(
        "Softplus", "log(1 + exp(beta * x)) / beta; linear above threshold.", 4,
        [](const Attrs& a) {
            return std::make_shared<nn::Softplus>(a.get_float("beta"), a.get_float("threshold"));
        },
        {attr::number("beta", 1.0, "Sharpness.", 0.0),
         attr::number("threshold", 20.0,
                      "Above beta * x > threshold the "
                      "output is x.")}));
    kinds.back().attrs[0].min_exclusive = true;
    kinds.push_back(activation("Hardswish", "x * relu6(x + 3) / 6.", 3, simple<nn::Hardswish>()));
}

} // namespace myelin::graph::detail
