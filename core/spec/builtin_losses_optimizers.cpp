// The built-in losses and optimizers: options with PyTorch's defaults, and their factories.
#include "builtin_kinds.h"

#include <myelin/nn/loss.h>
#include <myelin/optim/optim.h>
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

namespace {

AttrDesc lr(double def) {
    return exclusive(number("lr", def, "Learning rate.", 0.0));
}
AttrDesc weight_decay(double def = 0.0, std::string doc = "L2 penalty.") {
    return number("weight_decay", def, std::move(doc), 0.0);
}
AttrDesc maximize() {
    return flag("maximize", false, "Maximize the objective instead.");
}
AttrDesc eps(double def) {
    return number("eps", def, "Added to the denominator.", 0.0);
}
std::vector<AttrDesc> adam_options(double decay, std::string decay_doc) {
    return {lr(1e-3),
            number("beta1", 0.9, "Decay of the first moment.", 0.0, 1.0),
            number("beta2", 0.999, "Decay of the second moment.", 0.0, 1.0),
            eps(1e-8),
            weight_decay(decay, std::move(decay_doc)),
            flag("amsgrad", false, "Use the AMSGrad variant."),
            maximize()};
}
optim::AdamOptions adam_of(const Attrs& o) {
    optim::AdamOptions a;
    a.lr = o.get_float("lr");
    a.beta1 = o.get_float("beta1");
    a.beta2 = o.get_float("beta2");
    a.eps = o.get_float("eps");
    a.weight_decay = o.get_float("weight_decay");
    a.amsgrad = o.get_bool("amsgrad");
    a.maximize = o.get_bool("maximize");
    return a;
}

} // namespace

std::vector<OptimizerKind> optimizers() {
    using Groups = std::vector<optim::ParamGroup>;
    std::vector<OptimizerKind> kinds;
    kinds.push_back(
        kind<OptimizerKind>("Adam", "Adaptive moments (Kingma & Ba).",
                            adam_options(0.0, "L2 penalty."), [](const Attrs& o, Groups groups) {
                                return std::make_unique<optim::Adam>(std::move(groups), adam_of(o));
                            }));
    // exp_avg, exp_avg_sq, and max_exp_avg_sq with amsgrad.
    auto adam_state = [](const Attrs& o) { return o.get_bool("amsgrad") ? 3 : 2; };
    kinds.back().state_tensors_per_parameter = adam_state;
    kinds.push_back(kind<OptimizerKind>(
        "AdamW", "Adam with decoupled weight decay.", adam_options(1e-2, "Decoupled weight decay."),
        [](const Attrs& o, Groups groups) {
            return std::make_unique<optim::AdamW>(std::move(groups), adam_of(o));
        }));
    kinds.back().state_tensors_per_parameter = adam_state;
    kinds.push_back(kind<OptimizerKind>(
        "SGD", "Stochastic gradient descent with optional (Nesterov) momentum.",
        {lr(1e-2), number("momentum", 0.0, "Momentum factor.", 0.0),
         number("dampening", 0.0, "Dampening for momentum.", 0.0), weight_decay(),
         flag("nesterov", false, "Nesterov momentum (needs momentum > 0, dampening 0)."),
         maximize()},
        [](const Attrs& o, Groups groups) {
            optim::SGDOptions s;
            s.lr = o.get_float("lr");
            s.momentum = o.get_float("momentum");
            s.dampening = o.get_float("dampening");
            s.weight_decay = o.get_float("weight_decay");
            s.nesterov = o.get_bool("nesterov");
            s.maximize = o.get_bool("maximize");
            return std::make_unique<optim::SGD>(std::move(groups), s);
        }));
    kinds.back().state_tensors_per_parameter = [](const Attrs& o) {
        return o.get_float("momentum") != 0.0 ? 1 : 0; // momentum_buffer
    };
    kinds.push_back(kind<OptimizerKind>(
        "RMSprop", "Divides by a running average of squared gradients.",
        {lr(1e-2), number("alpha", 0.99, "Smoothing constant.", 0.0, 1.0), eps(1e-8),
         weight_decay(), number("momentum", 0.0, "Momentum factor.", 0.0),
         flag("centered", false, "Normalize by the estimated variance."), maximize()},
        [](const Attrs& o, Groups groups) {
            optim::RMSpropOptions r;
            r.lr = o.get_float("lr");
            r.alpha = o.get_float("alpha");
            r.eps = o.get_float("eps");
            r.weight_decay = o.get_float("weight_decay");
            r.momentum = o.get_float("momentum");
            r.centered = o.get_bool("centered");
            r.maximize = o.get_bool("maximize");
            return std::make_unique<optim::RMSprop>(std::move(groups), r);
        }));
    kinds.back().state_tensors_per_parameter = [](const Attrs& o) {
        // square_avg, momentum_buffer with momentum, grad_avg when centered.
        return 1 + (o.get_float("momentum") != 0.0 ? 1 : 0) + (o.get_bool("centered") ? 1 : 0);
    };
    kinds.push_back(kind<OptimizerKind>(
        "Adagrad", "Per-parameter rates from accumulated squared gradients.",
        {lr(1e-2), number("lr_decay", 0.0, "Learning rate decay.", 0.0), weight_decay(),
         number("initial_accumulator_value", 0.0, "Start of the accumulator.", 0.0), eps(1e-10),
         maximize()},
        [](const Attrs& o, Groups groups) {
            optim::AdagradOptions a;
            a.lr = o.get_float("lr");
            a.lr_decay = o.get_float("lr_decay");
            a.weight_decay = o.get_float("weight_decay");
            a.initial_accumulator_value = o.get_float("initial_accumulator_value");
            a.eps = o.get_float("eps");
            a.maximize = o.get_bool("maximize");
            return std::make_unique<optim::Adagrad>(std::move(groups), a);
        }));
    kinds.back().state_tensors_per_parameter = [](const Attrs&) { return 1; }; // sum
    return kinds;
}

} // namespace myelin::spec::builtin
