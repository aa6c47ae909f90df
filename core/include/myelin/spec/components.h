#pragma once
// The choosable parts of a project besides its layers — losses, optimizers, LR schedules, data
// sources and transforms. Each kind is one record: name, documentation, typed options with
// PyTorch's defaults, and the factory that builds it. The project reader checks options against
// these records, the studio builds its Training and Data pages from them, train builds each kind
// through them, and plugins add records of their own (register_kind). A new kind is one record;
// nothing else in core, the CLI or the studio names it.
#include <myelin/data/dataset.h>
#include <myelin/data/transforms.h>
#include <myelin/dtype.h>
#include <myelin/graph/attributes.h>
#include <myelin/spec/training.h>

#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace myelin {
class Tensor;
namespace nn {
class Loss;
}
namespace optim {
class Optimizer;
class LRScheduler;
class ReduceLROnPlateau;
struct ParamGroup;
} // namespace optim
} // namespace myelin

namespace myelin::spec {

// What every kind has: what the studio shows and the project reader checks.
struct ComponentKind {
    std::string name; // as written in project files: "Adam", "csv", "RandomCrop"
    std::string doc;
    std::vector<graph::AttrDesc> options;
    // Where the kind comes from: empty for built-in kinds, else the plugin file that added it.
    std::string origin;
};

// --- losses ---
// What a loss's factory may look at besides its options: the data and the model it will run on.
// Class weights are written by class name; the context turns them into a tensor in class order.
struct LossContext {
    std::vector<std::string> class_names; // the data's classes in index order; empty: regression
    int64_t outputs = 0;                  // the model's outputs per example; 0: not known
    DType dtype = DType::Float32;         // the model's floating dtype: weights are made in it
};
using LossFactory = std::function<std::shared_ptr<nn::Loss>(const graph::Attrs& options,
                                                            const LossContext& context)>;
struct LossKind : ComponentKind {
    LossFactory build;
    // Targets are int64 class indices (classification) rather than float values.
    bool takes_class_indices = false;
};

// --- optimizers (every optimizer has a Float option "lr": lr multipliers scale it) ---
using OptimizerFactory = std::function<std::unique_ptr<optim::Optimizer>(
    const graph::Attrs& options, std::vector<optim::ParamGroup> groups)>;
struct OptimizerKind : ComponentKind {
    OptimizerFactory build;
    // How many tensors of each parameter's size the optimizer keeps (Adam: exp_avg and
    // exp_avg_sq, 2; SGD: its momentum buffer, 1 with momentum, else 0), for the memory
    // pre-flight. Null: 2, as Adam (a plugin's optimizer that does not say).
    std::function<int(const graph::Attrs& options)> state_tensors_per_parameter;
};

// --- LR schedules: step- or epoch-driven (build), or driven by a metric (build_metric_driven);
// exactly one is set. Every step-driven kind also gets the options "warmup" and
// "warmup_start_factor" (a linear warmup before it) when it is registered.
// `total_steps`: how many times step() runs over the whole training.
using ScheduleFactory = std::function<std::shared_ptr<optim::LRScheduler>(
    const graph::Attrs& options, optim::Optimizer& optimizer, int64_t total_steps)>;
using MetricScheduleFactory = std::function<std::unique_ptr<optim::ReduceLROnPlateau>(
    const graph::Attrs& options, optim::Optimizer& optimizer)>;
struct SchedulerKind : ComponentKind {
    ScheduleFactory build;
    MetricScheduleFactory build_metric_driven;
    // The schedule sets the learning rate from its own options (OneCycleLR's max_lr): the
    // optimizer's lr is not used, so a fork cannot change it.
    bool sets_lr_itself = false;
    bool metric_driven() const { return bool(build_metric_driven); }
};

// --- data sources ---
// What a source loads: its training examples and, when the source has one, its own test part
// (otherwise `test_fraction` of the training examples is held out for the final test).
struct SourceData {
    data::DatasetPtr train;
    data::DatasetPtr test;
    double test_fraction = 0;
};
// A text source's train is a data::TextDataset without an encoder: make_data fits the
// vocabulary on the training split and encodes every split with it (data/text.h).
// What a loader needs besides its options: paths in options are relative to the project's folder.
class SourceContext {
  public:
    SourceContext(std::string source_kind, std::filesystem::path project_dir);
    // The option's value resolved against the project's folder ("" when empty).
    std::string path(const graph::Attrs& options, const char* option) const;
    // Like path, but throws "data source <kind>: option '<option>' is required" when empty.
    std::string required_path(const graph::Attrs& options, const char* option) const;
    // A path written in an option's text (a list of files) resolved the same way.
    std::string resolve(const std::string& path) const;
    const std::string& source_kind() const { return kind_; }

  private:
    std::string kind_;
    std::filesystem::path dir_;
};
using DataSourceLoader =
    std::function<SourceData(const graph::Attrs& options, const SourceContext& context)>;
struct DataSourceKind : ComponentKind {
    DataSourceLoader load;
    // The number of training examples when it is fixed and known without reading a file
    // (Fashion-MNIST: 60,000), before the validation hold-out; unset when files decide it.
    std::optional<int64_t> fixed_training_examples;
    // What those examples are, for people ("Fashion-MNIST training images").
    std::string fixed_training_examples_label;
    // The memory loading and holding its data takes at its peak, in bytes, estimated without
    // reading the data (the memory pre-flight, train/memory_estimate.h). Null: the sizes of the
    // files and folders its options name.
    std::function<int64_t(const graph::Attrs& options, const SourceContext& context)> memory_bytes;
};

// --- transforms ---
// What a transform may look at while it is built: the training split (Normalize computes its
// statistics there, after the deterministic transforms before it) and its first example.
struct TransformContext {
    const data::Dataset& train;
    const data::Example& first;
    data::TransformPtr deterministic_before; // null: none
};
struct BuiltTransform {
    data::TransformPtr transform;
    bool training_only = false; // random augmentation: the training set only
};
using TransformFactory =
    std::function<BuiltTransform(const graph::Attrs& options, const TransformContext& context)>;
struct TransformKind : ComponentKind {
    TransformFactory build;
};

// --- evaluation metrics ---
// The built-in metrics (accuracy, top-5 accuracy, macro precision / recall / F1; MAE, MSE, RMSE,
// R²) are computed together by train::ClassificationMetrics / RegressionMetrics. A registered
// metric kind adds one more: the trainer computes it on every validation and test pass of a
// task it fits and records it as val_<name> / test_<name>, and it is offered for early stopping
// and ReduceLROnPlateau like the built-in ones. Metric kinds take no options (yet).
class MetricAccumulator {
  public:
    virtual ~MetricAccumulator() = default;
    // One batch: the model's outputs and the targets, as the loss sees them.
    virtual void update(const Tensor& outputs, const Tensor& targets) = 0;
    // Over every batch seen.
    virtual double value() const = 0;
};
using MetricFactory = std::function<std::unique_ptr<MetricAccumulator>()>;
enum class MetricTask { Classification, Regression, Any };
struct MetricKind : ComponentKind {
    MetricFactory build;
    MetricTask task = MetricTask::Any;
    bool higher_is_better = false;
    bool fits(bool classification) const {
        return task == MetricTask::Any || (task == MetricTask::Classification) == classification;
    }
};
// The names the built-in metrics take (a metric kind may not take them).
const std::vector<std::string>& builtin_metric_names();

// What every room says about one metric: the trainer and the CLI, the studio's plots, log,
// evaluation, runs browser and comparison read it here and nowhere else.
struct MetricDescription {
    std::string name;  // as recorded, without the "val_" / "train_" / "test_" prefix: "macro_f1"
    std::string label; // for people: "macro F1", "R²" (a plugin metric: its name)
    bool higher_is_better = false;
    MetricTask task = MetricTask::Any;
    bool headline = false; // in compact lines: the CLI's epoch line, the studio's training log
    bool score = false;    // the task's score: the studio's score plot (accuracy, R²)
};
// The built-in metrics in the order rooms list them (loss, the classification scores, the
// regression errors), then the registered metric kinds.
std::vector<MetricDescription> metric_descriptions();
// `name` without its split prefix ("val_", "train_", "test_").
std::string_view metric_base_name(std::string_view name);
// The description of a recorded metric, with or without its split prefix; nullopt when it is
// no metric ("lr", "grad_norm/fc1").
std::optional<MetricDescription> describe_metric(std::string_view name);

// The registries, built-in kinds first, then plugin kinds in registration order. Records never
// move once registered (a deque), so pointers to them stay valid. Register before training or
// building pages starts: registration is not synchronised with readers on other threads.
template <class Kind> using KindList = std::deque<Kind>;
const KindList<LossKind>& loss_kinds();
const KindList<OptimizerKind>& optimizer_kinds();
const KindList<SchedulerKind>& scheduler_kinds();
const KindList<DataSourceKind>& data_source_kinds();
const KindList<TransformKind>& transform_kinds();
const KindList<MetricKind>& metric_kinds(); // none built in: see MetricKind

// Throws myelin::Error naming the kind when it could not be registered: its name is empty or
// already taken (saying by whom), its factory is missing, an option's default does not fit its
// own description, (optimizers) it has no Float option "lr", (schedules) an option is named
// like the warmup options.
void check_kind(const LossKind& kind);
void check_kind(const OptimizerKind& kind);
void check_kind(const SchedulerKind& kind);
void check_kind(const DataSourceKind& kind);
void check_kind(const TransformKind& kind);
void check_kind(const MetricKind& kind); // also: a built-in metric's name, options

// Adds a kind after check_kind.
void register_kind(LossKind kind);
void register_kind(OptimizerKind kind);
void register_kind(SchedulerKind kind);
void register_kind(DataSourceKind kind);
void register_kind(TransformKind kind);
void register_kind(MetricKind kind);

// The families, for code that handles any of them alike (the studio's choice editors).
enum class Family { Loss, Optimizer, Scheduler, DataSource, Transform, Metric };
const char* to_string(Family family); // "loss", "optimizer", "scheduler", "data source", ...
std::vector<const ComponentKind*> kinds_of(Family family);
const ComponentKind* find_component(Family family, std::string_view name); // nullptr: unknown

// nullptr when `name` is not among `kinds`.
template <class Kind>
const Kind* find_component(const KindList<Kind>& kinds, std::string_view name) {
    for (const Kind& k : kinds)
        if (k.name == name) return &k;
    return nullptr;
}

// The options of `choice` with defaults filled in, after checking every option against `kind`'s
// descriptions. Throws myelin::Error "<kind>: <problem>".
graph::Attrs checked_options(const ComponentKind& kind, const Choice& choice);
[[noreturn]] void throw_unknown_kind(const char* what, std::string_view name,
                                     const std::vector<std::string_view>& known);
// The kind `choice` names; throws myelin::Error "unknown <what> 'X' (known: ...)".
template <class Kind>
const Kind& kind_of(const KindList<Kind>& kinds, const Choice& choice, const char* what) {
    if (const Kind* k = find_component(kinds, choice.kind)) return *k;
    std::vector<std::string_view> known;
    for (const Kind& k : kinds)
        known.push_back(k.name);
    throw_unknown_kind(what, choice.kind, known);
}

// The numbers of a NumberTable option in order: by name against `names` (the data's classes;
// names not given are `fill`), or by position (exactly `count` numbers where `count` > 0). With
// no names in the context, names are refused (and a list is the way to give the numbers).
// Throws myelin::Error "<owner> <option>: ..." naming an unknown name with the known ones, or
// the count wanted. Empty when the table is.
std::vector<double> table_in_order(const graph::NumberTable& table,
                                   const std::vector<std::string>& names, int64_t count,
                                   double fill, const std::string& owner,
                                   const std::string& option);

// Whether the loss wants int64 class indices (classification) rather than float targets; false
// for an unknown loss.
bool loss_takes_class_indices(std::string_view loss_kind);
// Whether the schedule is driven by a metric (ReduceLROnPlateau); false for an unknown kind.
bool schedule_is_metric_driven(std::string_view scheduler_kind);

} // namespace myelin::spec
