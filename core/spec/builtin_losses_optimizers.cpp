// The built-in losses and optimizers: options with PyTorch's defaults, and their factories.
#include "builtin_kinds.h"

#include <myelin/nn/loss.h>
#include <myelin/optim/optim.h>
#include <myelin/spec/option_fields.h>
#include <myelin/tensor.h>

namespace myelin::spec::builtin {

using graph::AttrDesc;
using graph::Attrs;
using namespace graph::attr;

namespace {

AttrDesc reduction(std::vector<std::string> choices = {"mean", "sum"}) {
    return choice("reduction", "mean", std::move(choices), "How per-sample losses are combined.");
}
AttrDesc ignore_index() {
    return integer("ignore_index", -100, "Target value that contributes nothing.");
}
nn::Reduction reduction_of(const Attrs& o) {
    return nn::parse_reduction(o.get_string("reduction"));
}

AttrDesc class_weights() {
    return number_table("weight",
                        "Class weights by class name, e.g. {\"Coat\": 2.0}; classes not named "
                        "weigh 1. Weighted mean: divided by the weights of the targets.",
                        false, 0.0);
}
AttrDesc output_weights() {
    return number_table("weight",
                        "Rescales each output's loss, one number per output (by class name where "
                        "the data has class names, else a list).",
                        true, 0.0);
}

// A table option as a [C] tensor in class order (unnamed classes weigh 1), in the model's
// dtype; undefined when the table is empty (no weights, as PyTorch's None).
Tensor weights(const Attrs& o, const char* option, const LossContext& c, const char* loss,
               bool by_position) {
    std::vector<double> values = table_in_order(o.get_table(option), c.class_names,
                                                by_position ? c.outputs : 0, 1.0, loss, option);
    if (values.empty()) return Tensor();
    const int64_t n = int64_t(values.size());
    return from_vector(values, {n}).to(c.dtype);
}

LossKind loss(std::string name, std::string doc, std::vector<AttrDesc> options, LossFactory build,
              bool takes_class_indices = false) {
    LossKind k =
        kind<LossKind>(std::move(name), std::move(doc), std::move(options), std::move(build));
    k.takes_class_indices = takes_class_indices;
    return k;
}

} // namespace

std::vector<LossKind> losses() {
    std::vector<LossKind> kinds;
    kinds.push_back(loss(
        "CrossEntropyLoss", "Classification from logits [N, C] with int64 class targets [N].",
        {number("label_smoothing", 0.0, "Mixes the target with the uniform distribution.", 0.0,
                1.0),
         ignore_index(), reduction(), class_weights()},
        [](const Attrs& o, const LossContext& c) {
            nn::functional::CrossEntropyOptions options;
            options.ignore_index = o.get_int("ignore_index");
            options.label_smoothing = o.get_float("label_smoothing");
            options.reduction = reduction_of(o);
            options.weight = weights(o, "weight", c, "CrossEntropyLoss", false);
            return std::make_shared<nn::CrossEntropyLoss>(options);
        },
        true));
    kinds.push_back(loss(
        "NLLLoss", "Classification from log-probabilities (after LogSoftmax).",
        {ignore_index(), reduction(), class_weights()},
        [](const Attrs& o, const LossContext& c) {
            nn::functional::NllLossOptions options;
            options.ignore_index = o.get_int("ignore_index");
            options.reduction = reduction_of(o);
            options.weight = weights(o, "weight", c, "NLLLoss", false);
            return std::make_shared<nn::NLLLoss>(options);
        },
        true));
    kinds.push_back(loss(
        "BCEWithLogitsLoss", "Binary / multi-label classification from logits.",
        {reduction(),
         number_table("pos_weight",
                      "Weight of the positive examples, one per output (by class name where the "
                      "data has class names, else a list): above 1 raises recall.",
                      true, 0.0),
         output_weights()},
        [](const Attrs& o, const LossContext& c) {
            nn::functional::BCEWithLogitsOptions options;
            options.reduction = reduction_of(o);
            options.pos_weight = weights(o, "pos_weight", c, "BCEWithLogitsLoss", true);
            options.weight = weights(o, "weight", c, "BCEWithLogitsLoss", true);
            return std::make_shared<nn::BCEWithLogitsLoss>(options);
        }));
    kinds.push_back(loss("BCELoss", "Binary classification from probabilities (after Sigmoid).",
                         {reduction(), output_weights()}, [](const Attrs& o, const LossContext& c) {
                             return std::make_shared<nn::BCELoss>(
                                 weights(o, "weight", c, "BCELoss", true), reduction_of(o));
                         }));
    kinds.push_back(loss("MSELoss", "Regression: mean squared error.", {reduction()},
                         [](const Attrs& o, const LossContext&) {
                             return std::make_shared<nn::MSELoss>(reduction_of(o));
                         }));
    kinds.push_back(loss("L1Loss", "Regression: mean absolute error.", {reduction()},
                         [](const Attrs& o, const LossContext&) {
                             return std::make_shared<nn::L1Loss>(reduction_of(o));
                         }));
    kinds.push_back(loss(
        "SmoothL1Loss", "Regression: squared near zero, absolute beyond beta.",
        {number("beta", 1.0, "Where the loss turns from squared to absolute.", 0.0), reduction()},
        [](const Attrs& o, const LossContext&) {
            return std::make_shared<nn::SmoothL1Loss>(reduction_of(o), o.get_float("beta"));
        }));
    kinds.push_back(
        loss("HuberLoss", "Regression: squared near zero, linear beyond delta.",
             {exclusive(number("delta", 1.0, "Where the loss turns linear.", 0.0)), reduction()},
             [](const Attrs& o, const LossContext&) {
                 return std::make_shared<nn::HuberLoss>(reduction_of(o), o.get_float("delta"));
             }));
    kinds.push_back(loss(
        "KLDivLoss", "Distribution matching: input log-probabilities against target probabilities.",
        {flag("log_target", false, "The target is given as log-probabilities."),
         reduction({"batchmean", "mean", "sum"})},
        [](const Attrs& o, const LossContext&) {
            return std::make_shared<nn::KLDivLoss>(reduction_of(o), o.get_bool("log_target"));
        }));
    return kinds;
}

// Each optimizer's options are its typed options' fields (optim/optim.h): described there once.
std::vector<OptimizerKind> optimizers() {
    using namespace optim;
    using Groups = std::vector<ParamGroup>;
    std::vector<OptimizerKind> kinds;
    kinds.push_back(kind<OptimizerKind>("Adam", "Adaptive moments (Kingma & Ba).",
                                        described<AdamOptions>(), [](const Attrs& o, Groups g) {
                                            return std::make_unique<Adam>(
                                                std::move(g), read_options<AdamOptions>(o));
                                        }));
    // exp_avg, exp_avg_sq, and max_exp_avg_sq with amsgrad.
    auto adam_state = [](const Attrs& o) { return o.get_bool("amsgrad") ? 3 : 2; };
    kinds.back().state_tensors_per_parameter = adam_state;
    kinds.push_back(kind<OptimizerKind>("AdamW", "Adam with decoupled weight decay.",
                                        described(adamw_defaults()), [](const Attrs& o, Groups g) {
                                            return std::make_unique<AdamW>(
                                                std::move(g), read_options(o, adamw_defaults()));
                                        }));
    kinds.back().state_tensors_per_parameter = adam_state;
    kinds.push_back(kind<OptimizerKind>(
        "SGD", "Stochastic gradient descent with optional (Nesterov) momentum.",
        described<SGDOptions>(), [](const Attrs& o, Groups g) {
            return std::make_unique<SGD>(std::move(g), read_options<SGDOptions>(o));
        }));
    kinds.back().state_tensors_per_parameter = [](const Attrs& o) {
        return o.get_float("momentum") != 0.0 ? 1 : 0; // momentum_buffer
    };
    kinds.push_back(kind<OptimizerKind>(
        "RMSprop", "Divides by a running average of squared gradients.",
        described<RMSpropOptions>(), [](const Attrs& o, Groups g) {
            return std::make_unique<RMSprop>(std::move(g), read_options<RMSpropOptions>(o));
        }));
    kinds.back().state_tensors_per_parameter = [](const Attrs& o) {
        // square_avg, momentum_buffer with momentum, grad_avg when centered.
        return 1 + (o.get_float("momentum") != 0.0 ? 1 : 0) + (o.get_bool("centered") ? 1 : 0);
    };
    kinds.push_back(kind<OptimizerKind>(
        "Adagrad", "Per-parameter rates from accumulated squared gradients.",
        described<AdagradOptions>(), [](const Attrs& o, Groups g) {
            return std::make_unique<Adagrad>(std::move(g), read_options<AdagradOptions>(o));
        }));
    kinds.back().state_tensors_per_parameter = [](const Attrs&) { return 1; }; // sum
    return kinds;
}

} // namespace myelin::spec::builtin
