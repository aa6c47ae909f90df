// Descriptions of the training spec's components. Defaults are PyTorch's, so an option left out
// of a project means what it means in a PyTorch script.
#include <myelin/error.h>
#include <myelin/spec/components.h>

#include <optional>

namespace myelin::spec {

using graph::AttrDesc;
using graph::Attrs;
using graph::AttrType;

namespace {

AttrDesc option(std::string name, AttrType type, graph::AttrValue def, std::string doc) {
    AttrDesc d;
    d.name = std::move(name);
    d.type = type;
    d.default_value = std::move(def);
    d.doc = std::move(doc);
    return d;
}
AttrDesc number(std::string name, double def, std::string doc, std::optional<double> min = 0.0,
                std::optional<double> max = std::nullopt, bool min_exclusive = false) {
    AttrDesc d = option(std::move(name), AttrType::Float, def, std::move(doc));
    d.min = min;
    d.max = max;
    d.min_exclusive = min_exclusive;
    return d;
}
AttrDesc integer(std::string name, int64_t def, std::string doc, std::optional<double> min = 0.0) {
    AttrDesc d = option(std::move(name), AttrType::Int, def, std::move(doc));
    d.min = min;
    return d;
}
AttrDesc flag(std::string name, bool def, std::string doc) {
    return option(std::move(name), AttrType::Bool, def, std::move(doc));
}
AttrDesc choice(std::string name, std::string def, std::vector<std::string> choices,
                std::string doc) {
    AttrDesc d = option(std::move(name), AttrType::Enum, std::move(def), std::move(doc));
    d.choices = std::move(choices);
    return d;
}
AttrDesc text(std::string name, std::string def, std::string doc) {
    return option(std::move(name), AttrType::String, std::move(def), std::move(doc));
}
AttrDesc file(std::string name, std::string doc) {
    AttrDesc d = text(std::move(name), "", std::move(doc));
    d.path = AttrDesc::Path::File;
    return d;
}
AttrDesc folder(std::string name, std::string def, std::string doc) {
    AttrDesc d = text(std::move(name), std::move(def), std::move(doc));
    d.path = AttrDesc::Path::Folder;
    return d;
}
AttrDesc lr(double def) {
    return number("lr", def, "Learning rate.", 0.0, std::nullopt, true);
}
AttrDesc reduction(std::vector<std::string> choices = {"mean", "sum"}) {
    return choice("reduction", "mean", std::move(choices), "How per-sample losses are combined.");
}
const AttrDesc kWeightDecay = number("weight_decay", 0.0, "L2 penalty.");
const AttrDesc kMaximize = flag("maximize", false, "Maximize the objective instead.");

// Options for every non-plateau schedule: an optional linear warmup before it (SequentialLR of
// LinearLR then the schedule, as one would write in PyTorch).
void add_warmup(std::vector<AttrDesc>& options) {
    options.push_back(
        integer("warmup", 0, "Warm up linearly for this many scheduler steps first (0: none)."));
    options.push_back(number("warmup_start_factor", 0.1, "Warmup starts at lr times this factor.",
                             0.0, 1.0, true));
}

} // namespace

const ComponentKind* find_component(const std::vector<ComponentKind>& kinds,
                                    std::string_view name) {
    for (const auto& k : kinds)
        if (k.name == name) return &k;
    return nullptr;
}

const std::vector<ComponentKind>& loss_kinds() {
    static const std::vector<ComponentKind> kinds = {
        {"CrossEntropyLoss",
         "Classification from logits [N, C] with int64 class targets [N].",
         {number("label_smoothing", 0.0, "Mixes the target with the uniform distribution.", 0.0,
                 1.0),
          integer("ignore_index", -100, "Target value that contributes nothing.", std::nullopt),
          reduction()}},
        {"NLLLoss",
         "Classification from log-probabilities (after LogSoftmax).",
         {integer("ignore_index", -100, "Target value that contributes nothing.", std::nullopt),
          reduction()}},
        {"BCEWithLogitsLoss", "Binary / multi-label classification from logits.", {reduction()}},
        {"BCELoss", "Binary classification from probabilities (after Sigmoid).", {reduction()}},
        {"MSELoss", "Regression: mean squared error.", {reduction()}},
        {"L1Loss", "Regression: mean absolute error.", {reduction()}},
        {"SmoothL1Loss",
         "Regression: squared near zero, absolute beyond beta.",
         {number("beta", 1.0, "Where the loss turns from squared to absolute."), reduction()}},
        {"HuberLoss",
         "Regression: squared near zero, linear beyond delta.",
         {number("delta", 1.0, "Where the loss turns linear.", 0.0, std::nullopt, true),
          reduction()}},
        {"KLDivLoss",
         "Distribution matching: input log-probabilities against target "
         "probabilities.",
         {flag("log_target", false, "The target is given as log-probabilities."),
          reduction({"batchmean", "mean", "sum"})}},
    };
    return kinds;
}

const std::vector<ComponentKind>& optimizer_kinds() {
    static const std::vector<ComponentKind> kinds = {
        {"Adam",
         "Adaptive moments (Kingma & Ba).",
         {lr(1e-3), number("beta1", 0.9, "Decay of the first moment.", 0.0, 1.0),
          number("beta2", 0.999, "Decay of the second moment.", 0.0, 1.0),
          number("eps", 1e-8, "Added to the denominator."), kWeightDecay,
          flag("amsgrad", false, "Use the AMSGrad variant."), kMaximize}},
        {"AdamW",
         "Adam with decoupled weight decay.",
         {lr(1e-3), number("beta1", 0.9, "Decay of the first moment.", 0.0, 1.0),
          number("beta2", 0.999, "Decay of the second moment.", 0.0, 1.0),
          number("eps", 1e-8, "Added to the denominator."),
          number("weight_decay", 1e-2, "Decoupled weight decay."),
          flag("amsgrad", false, "Use the AMSGrad variant."), kMaximize}},
        {"SGD",
         "Stochastic gradient descent with optional (Nesterov) momentum.",
         {lr(1e-2), number("momentum", 0.0, "Momentum factor."),
          number("dampening", 0.0, "Dampening for momentum."), kWeightDecay,
          flag("nesterov", false, "Nesterov momentum (needs momentum > 0, dampening 0)."),
          kMaximize}},
        {"RMSprop",
         "Divides by a running average of squared gradients.",
         {lr(1e-2), number("alpha", 0.99, "Smoothing constant.", 0.0, 1.0),
          number("eps", 1e-8, "Added to the denominator."), kWeightDecay,
          number("momentum", 0.0, "Momentum factor."),
          flag("centered", false, "Normalize by the estimated variance."), kMaximize}},
        {"Adagrad",
         "Per-parameter rates from accumulated squared gradients.",
         {lr(1e-2), number("lr_decay", 0.0, "Learning rate decay."), kWeightDecay,
          number("initial_accumulator_value", 0.0, "Start of the accumulator."),
          number("eps", 1e-10, "Added to the denominator."), kMaximize}},
    };
    return kinds;
}

const std::vector<ComponentKind>& scheduler_kinds() {
    static const std::vector<ComponentKind> kinds = [] {
        std::vector<ComponentKind> k = {
            {"StepLR",
             "Multiplies the lr by gamma every step_size steps.",
             {integer("step_size", 10, "Steps between decays.", 1),
              number("gamma", 0.1, "Decay factor.")}},
            {"MultiStepLR",
             "Multiplies the lr by gamma at each milestone.",
             {[] {
                  AttrDesc d = option("milestones", AttrType::IntList, std::vector<int64_t>{30, 80},
                                      "Steps at which to decay.");
                  d.min = 0;
                  d.list_max_size = 32;
                  return d;
              }(),
              number("gamma", 0.1, "Decay factor.")}},
            {"ExponentialLR",
             "Multiplies the lr by gamma every step.",
             {number("gamma", 0.95, "Decay factor.")}},
            {"CosineAnnealingLR",
             "Cosine from lr down to eta_min over T_max steps.",
             {integer("T_max", 0, "Steps of the half cosine (0: the whole training)."),
              number("eta_min", 0.0, "Final learning rate.")}},
            {"CosineAnnealingWarmRestarts",
             "Cosine annealing restarting every T_0 (x T_mult) steps.",
             {integer("T_0", 10, "Steps until the first restart.", 1),
              integer("T_mult", 1, "Factor growing the period after each restart.", 1),
              number("eta_min", 0.0, "Lowest learning rate.")}},
            {"OneCycleLR",
             "Warms up to max_lr then anneals far below the start (1cycle policy).",
             {number("max_lr", 1e-2, "Peak learning rate.", 0.0, std::nullopt, true),
              number("pct_start", 0.3, "Fraction of the cycle spent increasing.", 0.0, 1.0),
              choice("anneal_strategy", "cos", {"cos", "linear"}, "Annealing shape."),
              flag("cycle_momentum", true, "Cycle momentum (or Adam's beta1) inversely."),
              number("base_momentum", 0.85, "Lowest momentum."),
              number("max_momentum", 0.95, "Highest momentum."),
              number("div_factor", 25.0, "Initial lr = max_lr / div_factor.", 0.0, std::nullopt,
                     true),
              number("final_div_factor", 1e4, "Final lr = initial lr / final_div_factor.", 0.0,
                     std::nullopt, true),
              flag("three_phase", false, "Use a third phase to anneal further.")}},
            {"LinearLR",
             "Changes the lr factor linearly over total_iters steps.",
             {number("start_factor", 1.0 / 3.0, "Factor at the start.", 0.0, 1.0, true),
              number("end_factor", 1.0, "Factor at the end.", 0.0, 1.0),
              integer("total_iters", 5, "Steps of the ramp.")}},
            {"ConstantLR",
             "Scales the lr by factor for the first total_iters steps.",
             {number("factor", 1.0 / 3.0, "Factor applied at first.", 0.0, 1.0),
              integer("total_iters", 5, "Steps at the lowered lr.")}},
        };
        for (auto& kind : k)
            add_warmup(kind.options);
        k.push_back(
            {"ReduceLROnPlateau",
             "Lowers the lr when the validation metric stops improving.",
             {choice("mode", "min", {"min", "max"}, "Whether lower or higher is better."),
              number("factor", 0.1, "Multiplier of the lr at each reduction.", 0.0, 1.0, true),
              integer("patience", 10, "Epochs without improvement before reducing."),
              number("threshold", 1e-4, "Minimal change counted as improvement."),
              choice("threshold_mode", "rel", {"rel", "abs"}, "Relative or absolute threshold."),
              integer("cooldown", 0, "Epochs to wait after a reduction."),
              number("min_lr", 0.0, "Lowest learning rate."),
              number("eps", 1e-8, "Smaller changes of the lr are ignored.")}});
        return k;
    }();
    return kinds;
}

const std::vector<ComponentKind>& data_source_kinds() {
    static const std::vector<ComponentKind> kinds = {
        {"fashion-mnist",
         "Fashion-MNIST from the Debian package dataset-fashion-mnist (70,000 28x28 grey "
         "images, 10 classes).",
         {folder("directory", "/usr/share/datasets/fashion-mnist",
                 "Folder holding the four IDX files.")}},
        {"idx",
         "MNIST-style IDX files (plain or .gz): images and labels.",
         {file("train_images", "Training images (IDX, uint8)."),
          file("train_labels", "Training labels (IDX, uint8)."),
          file("test_images", "Test images (optional)."),
          file("test_labels", "Test labels (optional)."),
          text("class_names", "", "Comma-separated class names (optional).")}},
        {"csv",
         "A table: feature columns and one target column.",
         {file("path", "The CSV file."), text("target_column", "", "Column to predict."),
          text("feature_columns", "", "Comma-separated feature columns (empty: all others)."),
          choice("task", "classification", {"classification", "regression"},
                 "Categorical target (class indices) or numeric target."),
          flag("header", true, "The first row names the columns."),
          number("test_fraction", 0.2, "Rows held out for the final test.", 0.0, 1.0, false)}},
        {"npy",
         "NumPy arrays: features [N, ...] and targets [N].",
         {file("features", "Features .npy file."), file("targets", "Targets .npy file."),
          choice("task", "classification", {"classification", "regression"},
                 "int64 class targets or float targets."),
          number("test_fraction", 0.2, "Rows held out for the final test.", 0.0, 1.0, false)}},
        {"image-folder",
         "One subfolder per class with PNG/JPEG images.",
         {folder("root", "", "The folder."), integer("height", 32, "Resize height.", 1),
          integer("width", 32, "Resize width.", 1),
          choice("color", "rgb", {"rgb", "grey"}, "Channels."),
          number("test_fraction", 0.2, "Images held out for the final test.", 0.0, 1.0, false)}},
    };
    return kinds;
}

const std::vector<ComponentKind>& transform_kinds() {
    static const std::vector<ComponentKind> kinds = {
        {"ScaleTo01", "uint8 [0, 255] to float [0, 1].", {}},
        {"Normalize",
         "(x - mean) / std per channel; empty: computed from the training set.",
         {text("mean", "", "Comma-separated per-channel means (empty: computed)."),
          text("std", "", "Comma-separated per-channel stds (empty: computed).")}},
        {"RandomHorizontalFlip",
         "Mirrors images left-right with probability p.",
         {number("p", 0.5, "Probability of flipping.", 0.0, 1.0)}},
        {"RandomCrop",
         "Pads then crops a random window of the original size.",
         {integer("padding", 4, "Zero padding on each side.")}},
        {"RandomAffineShift",
         "Shifts images by up to max_dx / max_dy pixels.",
         {integer("max_dx", 2, "Largest horizontal shift."),
          integer("max_dy", 2, "Largest vertical shift.")}},
    };
    return kinds;
}

bool loss_takes_class_indices(std::string_view loss_kind) {
    return loss_kind == "CrossEntropyLoss" || loss_kind == "NLLLoss";
}

Attrs checked_options(const std::vector<ComponentKind>& kinds, const Choice& c, const char* what) {
    const ComponentKind* kind = find_component(kinds, c.kind);
    if (!kind) {
        std::string known;
        for (const auto& k : kinds)
            known += (known.empty() ? "" : ", ") + k.name;
        throw Error(std::string("unknown ") + what + " '" + c.kind + "' (known: " + known + ")");
    }
    auto problems = graph::check_attrs(kind->options, c.options);
    if (!problems.empty()) throw Error(c.kind + ": " + problems.front());
    return graph::with_defaults(kind->options, c.options);
}

} // namespace myelin::spec
