#include <myelin/train/layer_inspection.h>

#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/io/project.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

namespace myelin::train {

namespace lm = layer_metric;

std::string layer_metric_key(std::string_view family, std::string_view layer) {
    std::string key(family);
    key += '/';
    key += layer;
    return key;
}

namespace {

// module name -> layer kind, in the model's forward order; empty when the project cannot be
// read (then the caller falls back to sorted names).
std::vector<RecordedLayer> model_layers(const std::string& project_json, int64_t run) {
    std::vector<RecordedLayer> layers;
    try {
        const io::Project project = io::parse_project(project_json, "run " + std::to_string(run));
        const graph::Analysis analysis = graph::analyze(project.model);
        for (size_t index : analysis.order) {
            const std::string& module = analysis.nodes[index].module_name;
            if (!module.empty()) layers.push_back({module, project.model.nodes[index].kind});
        }
    } catch (const Error&) {
        layers.clear();
    }
    return layers;
}

// The recorded step of `family` nearest `step` (the newest when unset), from the first layer
// that has the family: every layer is recorded at the same steps.
std::optional<int64_t> nearest_recorded_step(const store::RunStore& store, int64_t run,
                                             const std::vector<RecordedLayer>& layers,
                                             std::string_view family, std::optional<int64_t> step) {
    for (const auto& layer : layers) {
        const auto point =
            store.nearest_metric_point(run, layer_metric_key(family, layer.name),
                                       step.value_or(std::numeric_limits<int64_t>::max()));
        if (point) return point->step;
    }
    return std::nullopt;
}

std::optional<double> value_at(const store::RunStore& store, int64_t run, std::string_view family,
                               const std::string& layer, std::optional<int64_t> step) {
    if (!step) return std::nullopt;
    const auto points = store.metric_series(run, layer_metric_key(family, layer), {*step, *step});
    if (points.empty()) return std::nullopt;
    return points.front().value;
}

} // namespace

std::vector<RecordedLayer> recorded_layers(const store::RunStore& store, int64_t run) {
    std::set<std::string> recorded;
    for (const std::string& key : store.metric_keys(run)) {
        const size_t slash = key.find('/');
        if (slash == std::string::npos) continue;
        const std::string_view family = std::string_view(key).substr(0, slash);
        if (family == lm::kGradNorm || family == lm::kActivationMean)
            recorded.insert(key.substr(slash + 1));
    }
    std::vector<RecordedLayer> layers;
    for (auto& layer : model_layers(store.run(run).project_json, run))
        if (recorded.erase(layer.name)) layers.push_back(std::move(layer));
    for (const std::string& name : recorded) // sorted: std::set
        layers.push_back({name, {}});
    return layers;
}

LayerStatsTable layer_stats_at(const store::RunStore& store, int64_t run,
                               std::optional<int64_t> step) {
    LayerStatsTable table;
    table.requested_step = step;
    const std::vector<RecordedLayer> layers = recorded_layers(store, run);
    table.norms_step = nearest_recorded_step(store, run, layers, lm::kGradNorm, step);
    table.summaries_step = nearest_recorded_step(store, run, layers, lm::kActivationMean, step);
    for (const auto& layer : layers) {
        LayerStatsRow row{layer, {}, {}, {}, {}, {}, {}, {}};
        const auto norm = [&](std::string_view family) {
            return value_at(store, run, family, layer.name, table.norms_step);
        };
        const auto summary = [&](std::string_view family) {
            return value_at(store, run, family, layer.name, table.summaries_step);
        };
        row.grad_norm = norm(lm::kGradNorm);
        row.weight_norm = norm(lm::kWeightNorm);
        row.update_ratio = norm(lm::kUpdateRatio);
        row.activation_mean = summary(lm::kActivationMean);
        row.activation_std = summary(lm::kActivationStd);
        row.zero_fraction = summary(lm::kActivationZeros);
        const auto bad_activations = summary(lm::kActivationNonFinite);
        const auto bad_gradients = summary(lm::kGradientNonFinite);
        if (bad_activations || bad_gradients)
            row.nonfinite = bad_activations.value_or(0) + bad_gradients.value_or(0);
        table.rows.push_back(std::move(row));
    }
    return table;
}

std::string format_layer_stats(const LayerStatsTable& table) {
    const auto step_text = [](std::optional<int64_t> s) {
        return s ? "step " + std::to_string(*s) : std::string("none recorded");
    };
    std::string out;
    if (table.rows.empty())
        return "no per-layer statistics recorded (training.capture was off for this run)\n";
    out += "norms: " + step_text(table.norms_step) +
           "; activations: " + step_text(table.summaries_step);
    if (table.requested_step &&
        (table.norms_step != table.requested_step || table.summaries_step != table.requested_step))
        out += " (nearest recorded to step " + std::to_string(*table.requested_step) + ")";
    out += '\n';

    const auto cell = [](std::optional<double> v, const char* format) {
        if (!v) return std::string("-");
        char buffer[32];
        std::snprintf(buffer, sizeof buffer, format, *v);
        return std::string(buffer);
    };
    size_t name_width = 5;
    for (const auto& row : table.rows)
        name_width = std::max(name_width, row.layer.name.size() + row.layer.kind.size() + 3);
    name_width = std::min<size_t>(name_width, 200); // the line buffer holds it and the numbers
    char line[512];
    std::snprintf(line, sizeof line, "%-*s %11s %11s %11s %11s %11s %7s %9s\n", int(name_width),
                  "layer", "grad norm", "weight norm", "update/w", "act mean", "act std", "zeros",
                  "nonfinite");
    out += line;
    for (const auto& row : table.rows) {
        const std::string name =
            row.layer.kind.empty() ? row.layer.name : row.layer.name + " (" + row.layer.kind + ")";
        const std::optional<double> zeros_percent =
            row.zero_fraction ? std::optional<double>(*row.zero_fraction * 100) : std::nullopt;
        std::snprintf(line, sizeof line, "%-*s %11s %11s %11s %11s %11s %7s %9s\n", int(name_width),
                      name.c_str(), cell(row.grad_norm, "%.4g").c_str(),
                      cell(row.weight_norm, "%.4g").c_str(), cell(row.update_ratio, "%.3g").c_str(),
                      cell(row.activation_mean, "%.4g").c_str(),
                      cell(row.activation_std, "%.4g").c_str(),
                      cell(zeros_percent, "%.1f%%").c_str(), cell(row.nonfinite, "%.0f").c_str());
        out += line;
    }
    return out;
}

} // namespace myelin::train
