// The component registries: built-in kinds (builtin_*.cpp) first, plugin kinds after, each
// checked once on registration so every reader can trust a record.
#include "builtin_kinds.h"

#include <myelin/error.h>
#include <myelin/spec/components.h>

#include <algorithm>

namespace myelin::spec {

using graph::Attrs;

namespace {

template <class Kind> KindList<Kind> list_of(std::vector<Kind> kinds) {
    KindList<Kind> list;
    for (auto& k : kinds)
        list.push_back(std::move(k));
    return list;
}

KindList<LossKind>& losses() {
    static KindList<LossKind> kinds = list_of(builtin::losses());
    return kinds;
}
KindList<OptimizerKind>& optimizers() {
    static KindList<OptimizerKind> kinds = list_of(builtin::optimizers());
    return kinds;
}
KindList<SchedulerKind>& schedulers() {
    static KindList<SchedulerKind> kinds = [] {
        auto list = list_of(builtin::schedulers());
        for (auto& k : list)
            if (!k.metric_driven())
                for (auto& option : builtin::warmup_options())
                    k.options.push_back(std::move(option));
        return list;
    }();
    return kinds;
}
KindList<DataSourceKind>& data_sources() {
    static KindList<DataSourceKind> kinds = list_of(builtin::data_sources());
    return kinds;
}
KindList<TransformKind>& transforms() {
    static KindList<TransformKind> kinds = list_of(builtin::transforms());
    return kinds;
}
KindList<MetricKind>& metrics() {
    static KindList<MetricKind> kinds;
    return kinds;
}

// The checks every family shares; `has_factory` is the family's own.
template <class Kind>
void check_new_kind(const KindList<Kind>& kinds, const Kind& kind, Family family,
                    bool has_factory) {
    const std::string what = std::string(to_string(family)) + " '" + kind.name + "'";
    if (kind.name.empty()) throw Error(std::string("a ") + to_string(family) + " needs a name");
    if (const Kind* taken = find_component(kinds, kind.name))
        throw Error(
            what + " is already registered " +
            (taken->origin.empty() ? std::string("(built in)") : "(by " + taken->origin + ")"));
    if (!has_factory) throw Error(what + " has no factory");
    for (const auto& option : kind.options) {
        if (option.name.empty()) throw Error(what + ": an option has no name");
        if (std::string why = option.check(option.default_value); !why.empty())
            throw Error(what + ": the default of option '" + option.name + "' " + why);
    }
}

} // namespace

const KindList<LossKind>& loss_kinds() {
    return losses();
}
const KindList<OptimizerKind>& optimizer_kinds() {
    return optimizers();
}
const KindList<SchedulerKind>& scheduler_kinds() {
    return schedulers();
}
const KindList<DataSourceKind>& data_source_kinds() {
    return data_sources();
}
const KindList<TransformKind>& transform_kinds() {
    return transforms();
}
const KindList<MetricKind>& metric_kinds() {
    return metrics();
}

namespace {

const std::vector<MetricDescription>& builtin_metrics() {
    using T = MetricTask;
    // name, label, higher is better, task, headline, score
    static const std::vector<MetricDescription> table = {
        {"loss", "loss", false, T::Any, true, false},
        {"accuracy", "accuracy", true, T::Classification, true, true},
        {"top5_accuracy", "top-5 accuracy", true, T::Classification, false, false},
        {"macro_precision", "macro precision", true, T::Classification, false, false},
        {"macro_recall", "macro recall", true, T::Classification, false, false},
        {"macro_f1", "macro F1", true, T::Classification, false, false},
        {"mae", "MAE", false, T::Regression, true, false},
        {"mse", "MSE", false, T::Regression, false, false},
        {"rmse", "RMSE", false, T::Regression, true, false},
        {"r2", "R²", true, T::Regression, true, true},
    };
    return table;
}

} // namespace

const std::vector<std::string>& builtin_metric_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const MetricDescription& m : builtin_metrics())
            out.push_back(m.name);
        return out;
    }();
    return names;
}

std::vector<MetricDescription> metric_descriptions() {
    std::vector<MetricDescription> out = builtin_metrics();
    for (const MetricKind& kind : metric_kinds())
        out.push_back({kind.name, kind.name, kind.higher_is_better, kind.task, false, false});
    return out;
}

std::string_view metric_base_name(std::string_view name) {
    for (std::string_view prefix : {"val_", "train_", "test_"})
        if (name.starts_with(prefix)) return name.substr(prefix.size());
    return name;
}

std::optional<MetricDescription> describe_metric(std::string_view name) {
    const std::string_view base = metric_base_name(name);
    for (const MetricDescription& m : builtin_metrics())
        if (m.name == base) return m;
    if (const MetricKind* kind = find_component(metric_kinds(), base))
        return MetricDescription{kind->name, kind->name, kind->higher_is_better,
                                 kind->task, false,      false};
    return std::nullopt;
}

void check_kind(const LossKind& kind) {
    check_new_kind(losses(), kind, Family::Loss, bool(kind.build));
}

void check_kind(const OptimizerKind& kind) {
    check_new_kind(optimizers(), kind, Family::Optimizer, bool(kind.build));
    const graph::AttrDesc* lr = nullptr;
    for (const auto& option : kind.options)
        if (option.name == "lr") lr = &option;
    if (!lr || lr->type != graph::AttrType::Float)
        throw Error("optimizer '" + kind.name + "' needs a Float option 'lr'");
}

void check_kind(const SchedulerKind& kind) {
    if (kind.build && kind.build_metric_driven)
        throw Error("scheduler '" + kind.name + "' has two factories; set one");
    check_new_kind(schedulers(), kind, Family::Scheduler,
                   bool(kind.build) || bool(kind.build_metric_driven));
    if (!kind.metric_driven())
        for (const auto& option : builtin::warmup_options())
            for (const auto& own : kind.options)
                if (own.name == option.name)
                    throw Error("scheduler '" + kind.name + "': option '" + own.name +
                                "' is reserved for the warmup every schedule has");
}

void check_kind(const DataSourceKind& kind) {
    check_new_kind(data_sources(), kind, Family::DataSource, bool(kind.load));
}

void check_kind(const TransformKind& kind) {
    check_new_kind(transforms(), kind, Family::Transform, bool(kind.build));
}

void check_kind(const MetricKind& kind) {
    check_new_kind(metrics(), kind, Family::Metric, bool(kind.build));
    for (const std::string& taken : builtin_metric_names())
        if (kind.name == taken)
            throw Error("metric '" + kind.name + "' is a built-in metric's name");
    if (!kind.options.empty())
        throw Error("metric '" + kind.name + "': metric kinds take no options yet");
}

void register_kind(LossKind kind) {
    check_kind(kind);
    losses().push_back(std::move(kind));
}

void register_kind(OptimizerKind kind) {
    check_kind(kind);
    optimizers().push_back(std::move(kind));
}

void register_kind(SchedulerKind kind) {
    check_kind(kind);
    if (!kind.metric_driven())
        for (auto& option : builtin::warmup_options())
            kind.options.push_back(std::move(option));
    schedulers().push_back(std::move(kind));
}

void register_kind(DataSourceKind kind) {
    check_kind(kind);
    data_sources().push_back(std::move(kind));
}

void register_kind(TransformKind kind) {
    check_kind(kind);
    transforms().push_back(std::move(kind));
}

void register_kind(MetricKind kind) {
    check_kind(kind);
    metrics().push_back(std::move(kind));
}

const char* to_string(Family family) {
    switch (family) {
    case Family::Loss:
        return "loss";
    case Family::Optimizer:
        return "optimizer";
    case Family::Scheduler:
        return "scheduler";
    case Family::DataSource:
        return "data source";
    case Family::Transform:
        return "transform";
    case Family::Metric:
        return "metric";
    }
    return "?";
}

namespace {
template <class Kind> std::vector<const ComponentKind*> bases(const KindList<Kind>& kinds) {
    std::vector<const ComponentKind*> out;
    for (const Kind& k : kinds)
        out.push_back(&k);
    return out;
}
} // namespace

std::vector<const ComponentKind*> kinds_of(Family family) {
    switch (family) {
    case Family::Loss:
        return bases(loss_kinds());
    case Family::Optimizer:
        return bases(optimizer_kinds());
    case Family::Scheduler:
        return bases(scheduler_kinds());
    case Family::DataSource:
        return bases(data_source_kinds());
    case Family::Transform:
        return bases(transform_kinds());
    case Family::Metric:
        return bases(metric_kinds());
    }
    return {};
}

const ComponentKind* find_component(Family family, std::string_view name) {
    for (const ComponentKind* k : kinds_of(family))
        if (k->name == name) return k;
    return nullptr;
}

void throw_unknown_kind(const char* what, std::string_view name,
                        const std::vector<std::string_view>& known) {
    std::string list;
    for (std::string_view k : known)
        list += (list.empty() ? "" : ", ") + std::string(k);
    throw Error(std::string("unknown ") + what + " '" + std::string(name) + "' (known: " + list +
                ")");
}

Attrs checked_options(const ComponentKind& kind, const Choice& c) {
    auto problems = graph::check_attrs(kind.options, c.options);
    if (!problems.empty()) throw Error(c.kind + ": " + problems.front());
    return graph::with_defaults(kind.options, c.options);
}

std::vector<double> table_in_order(const graph::NumberTable& table,
                                   const std::vector<std::string>& names, int64_t count,
                                   double fill, const std::string& owner,
                                   const std::string& option) {
    const std::string who = owner + " " + option + ": ";
    if (!table.by_position.empty()) {
        if (count > 0 && int64_t(table.by_position.size()) != count)
            throw Error(who + std::to_string(table.by_position.size()) +
                        " numbers given, but the model has " + std::to_string(count) + " output" +
                        (count == 1 ? "" : "s") + " (one number each)");
        return table.by_position;
    }
    if (table.by_name.empty()) return {};
    if (names.empty())
        throw Error(who + "given by name ('" + table.by_name.front().first +
                    "'), but the data has no class names (its targets are numbers): give one "
                    "number per output as a list, [w0, w1, ...]");
    std::vector<double> out(names.size(), fill);
    for (const auto& [name, value] : table.by_name) {
        auto it = std::find(names.begin(), names.end(), name);
        if (it == names.end()) {
            std::string known;
            const size_t shown = std::min<size_t>(names.size(), 20);
            for (size_t i = 0; i < shown; ++i)
                known += (i ? ", " : "") + names[i];
            if (shown < names.size())
                known += ", ... (" + std::to_string(names.size()) + " in all)";
            throw Error(who + "the data has no class '" + name + "' (its classes: " + known + ")");
        }
        out[size_t(it - names.begin())] = value;
    }
    return out;
}

bool loss_takes_class_indices(std::string_view loss_kind) {
    const LossKind* k = find_component(loss_kinds(), loss_kind);
    return k && k->takes_class_indices;
}

bool schedule_is_metric_driven(std::string_view scheduler_kind) {
    const SchedulerKind* k = find_component(scheduler_kinds(), scheduler_kind);
    return k && k->metric_driven();
}

SourceContext::SourceContext(std::string source_kind, std::filesystem::path project_dir)
    : kind_(std::move(source_kind)), dir_(std::move(project_dir)) {}

std::string SourceContext::path(const Attrs& options, const char* option) const {
    return resolve(options.get_string(option));
}

std::string SourceContext::resolve(const std::string& value) const {
    if (value.empty()) return value;
    std::filesystem::path p(value);
    return (p.is_absolute() ? p : dir_ / p).lexically_normal().string();
}

std::string SourceContext::required_path(const Attrs& options, const char* option) const {
    std::string value = path(options, option);
    if (value.empty())
        throw Error("data source " + kind_ + ": option '" + option + "' is required");
    return value;
}

} // namespace myelin::spec
