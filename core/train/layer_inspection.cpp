#include <myelin/train/layer_inspection.h>
#include <myelin/train/store_sink.h>

#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/graph/registry.h>
#include <myelin/io/project.h>

#include <algorithm>
#include <cmath>
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

std::vector<RecordedLayer> run_model_layers(const store::RunStore& store, int64_t run) {
    return model_layers(store.run(run).project_json, run);
}

std::vector<RecordedLayer> recorded_layers(const store::RunStore& store, int64_t run) {
    return recorded_layers(store, run, run_model_layers(store, run));
}

std::vector<RecordedLayer> recorded_layers(const store::RunStore& store, int64_t run,
                                           const std::vector<RecordedLayer>& model) {
    std::set<std::string> recorded;
    for (const std::string& key : store.metric_keys(run)) {
        const size_t slash = key.find('/');
        if (slash == std::string::npos) continue;
        const std::string_view family = std::string_view(key).substr(0, slash);
        if (family == lm::kGradNorm || family == lm::kActivationMean)
            recorded.insert(key.substr(slash + 1));
    }
    std::vector<RecordedLayer> layers;
    for (const auto& layer : model)
        if (recorded.erase(layer.name)) layers.push_back(layer);
    for (const std::string& name : recorded) // sorted: std::set
        layers.push_back({name, {}});
    return layers;
}

LayerStatsTable layer_stats_at(const store::RunStore& store, int64_t run,
                               std::optional<int64_t> step) {
    return layer_stats_at(store, run, step, run_model_layers(store, run));
}

LayerStatsTable layer_stats_at(const store::RunStore& store, int64_t run,
                               std::optional<int64_t> step,
                               const std::vector<RecordedLayer>& model) {
    LayerStatsTable table;
    table.requested_step = step;
    const std::vector<RecordedLayer> layers = recorded_layers(store, run, model);
    table.norms_step = nearest_recorded_step(store, run, layers, lm::kGradNorm, step);
    table.summaries_step = nearest_recorded_step(store, run, layers, lm::kActivationMean, step);
    for (const auto& layer : layers) {
        LayerStatsRow row{layer, {}, {}, {}, {}, {}, {}, {}, {}, {}};
        const auto norm = [&](std::string_view family) {
            return value_at(store, run, family, layer.name, table.norms_step);
        };
        const auto summary = [&](std::string_view family) {
            return value_at(store, run, family, layer.name, table.summaries_step);
        };
        row.grad_norm = norm(lm::kGradNorm);
        row.weight_norm = norm(lm::kWeightNorm);
        row.update_ratio = norm(lm::kUpdateRatio);
        row.grad_mean_abs = norm(lm::kGradMeanAbs);
        row.grad_max_abs = norm(lm::kGradMaxAbs);
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

const char* health_name(LayerHealth health) {
    switch (health) {
    case LayerHealth::Unknown:
        return "unknown";
    case LayerHealth::Healthy:
        return "healthy";
    case LayerHealth::Vanishing:
        return "vanishing";
    case LayerHealth::Exploding:
        return "exploding";
    case LayerHealth::Dead:
        return "dead";
    case LayerHealth::NonFinite:
        return "non-finite";
    case LayerHealth::Frozen:
        return "frozen";
    }
    return "unknown";
}

LayerHealth classify_layer(const LayerStatsRow& row, double median_grad_norm, bool activation,
                           std::string* reason) {
    char text[160];
    const auto say = [&](LayerHealth health) {
        if (reason) *reason = text;
        return health;
    };
    if ((row.nonfinite && *row.nonfinite > 0) ||
        (row.grad_norm && !std::isfinite(*row.grad_norm))) {
        std::snprintf(text, sizeof text, "NaN or infinite values in its activation or gradient");
        return say(LayerHealth::NonFinite);
    }
    if (activation && row.zero_fraction && *row.zero_fraction >= 0.9) {
        std::snprintf(text, sizeof text, "%.0f%% of its outputs are exactly zero (dead units)",
                      *row.zero_fraction * 100);
        return say(LayerHealth::Dead);
    }
    if (row.grad_norm) {
        const double g = *row.grad_norm;
        const bool relative = median_grad_norm > 0;
        if (g > 1e4 || (relative && g > 1e3 * median_grad_norm)) {
            std::snprintf(text, sizeof text,
                          "gradient norm %.3g, over 1000 x the layers' median %.3g", g,
                          median_grad_norm);
            return say(LayerHealth::Exploding);
        }
        if (g < 1e-7 || (relative && g < 1e-3 * median_grad_norm)) {
            std::snprintf(text, sizeof text,
                          "gradient norm %.3g, under 1/1000 of the layers' median %.3g", g,
                          median_grad_norm);
            return say(LayerHealth::Vanishing);
        }
    }
    if (!row.grad_norm && !row.zero_fraction) {
        std::snprintf(text, sizeof text, "nothing recorded");
        return say(LayerHealth::Unknown);
    }
    std::snprintf(text, sizeof text, "within the usual range");
    return say(LayerHealth::Healthy);
}

std::vector<LayerBadge> layer_badges_at(const store::RunStore& store, int64_t run,
                                        std::optional<int64_t> step, int points) {
    return layer_badges(store, run, layer_stats_at(store, run, step), points);
}

std::vector<LayerBadge> layer_badges(const store::RunStore& store, int64_t run,
                                     const LayerStatsTable& table, int points) {
    // The layers frozen when the norms were taken (their change applies from the next step).
    std::set<std::string> frozen;
    if (table.norms_step) {
        std::vector<store::RunEvent> events = store.events(run);
        std::stable_sort(events.begin(), events.end(),
                         [](const auto& a, const auto& b) { return a.step < b.step; });
        for (const store::RunEvent& e : events)
            if (e.kind == kFrozenEvent && e.step < *table.norms_step) {
                if (e.message == "frozen")
                    frozen.insert(e.layer);
                else
                    frozen.erase(e.layer);
            }
    }
    std::vector<double> norms; // of the layers that train: a frozen one's 0 is no measure
    for (const auto& row : table.rows)
        if (row.grad_norm && std::isfinite(*row.grad_norm) && !frozen.count(row.layer.name))
            norms.push_back(*row.grad_norm);
    double median = 0;
    if (norms.size() >= 2) {
        std::nth_element(norms.begin(), norms.begin() + norms.size() / 2, norms.end());
        median = norms[norms.size() / 2];
    }
    std::vector<LayerBadge> badges;
    for (const auto& row : table.rows) {
        LayerBadge badge;
        badge.layer = row.layer;
        const graph::LayerKind* kind = graph::find_layer_kind(row.layer.kind);
        const bool activation = kind && kind->category == graph::Category::Activation;
        if (frozen.count(row.layer.name)) {
            badge.health = LayerHealth::Frozen;
            badge.reason = "frozen: its parameters do not train, so it has no gradient";
        } else {
            badge.health = classify_layer(row, median, activation, &badge.reason);
        }
        badge.grad_norm = row.grad_norm;
        badge.zero_fraction = row.zero_fraction;
        badge.activation_mean = row.activation_mean;
        badge.activation_std = row.activation_std;
        if (table.norms_step && row.grad_norm && points > 0)
            for (const auto& bucket : store.metric_series_downsampled(
                     run, layer_metric_key(lm::kGradNorm, row.layer.name), {0, *table.norms_step},
                     points))
                badge.recent_grad_norms.push_back(bucket.max);
        badges.push_back(std::move(badge));
    }
    return badges;
}

std::vector<double> rebin_histogram(const store::HistogramSample& h, double low, double high,
                                    int bins) {
    std::vector<double> out(size_t(std::max(bins, 0)), 0.0);
    const size_t n = h.counts.size();
    if (out.empty() || n == 0 || !(high > low)) return out;
    const double width = (h.max - h.min) / double(n);
    const double target = (high - low) / double(bins);
    for (size_t i = 0; i < n; ++i) {
        const double count = h.counts[i];
        if (count == 0) continue;
        const double a = h.min + width * double(i), b = a + width;
        if (width <= 0) { // a degenerate histogram: everything at one value
            const double at = std::floor((h.min - low) / target);
            if (h.min >= low && h.min <= high) out[size_t(std::min(at, double(bins - 1)))] += count;
            continue;
        }
        const int first = std::max(0, int(std::floor((a - low) / target)));
        const int last = std::min(bins - 1, int(std::floor((b - low) / target)));
        for (int k = first; k <= last; ++k) {
            const double lo = std::max(a, low + target * k),
                         hi = std::min(b, low + target * (k + 1));
            if (hi > lo) out[size_t(k)] += count * (hi - lo) / width;
        }
    }
    return out;
}

std::vector<double> histogram_quantiles(const store::HistogramSample& h,
                                        const std::vector<double>& quantiles) {
    double total = 0;
    for (double c : h.counts)
        total += c;
    std::vector<double> out;
    const size_t n = h.counts.size();
    if (total <= 0 || n == 0) return std::vector<double>(quantiles.size(), std::nan(""));
    const double width = (h.max - h.min) / double(n);
    for (double q : quantiles) {
        const double target = std::clamp(q, 0.0, 1.0) * total;
        double below = 0;
        double value = h.max;
        for (size_t i = 0; i < n; ++i) {
            const double c = h.counts[i];
            if (c > 0 && below + c >= target) {
                value = h.min + width * (double(i) + (target - below) / c);
                break;
            }
            below += c;
        }
        out.push_back(value);
    }
    return out;
}

std::vector<RecordedLayer> layers_with_histograms(const store::RunStore& store, int64_t run) {
    std::set<std::string> names;
    for (const std::string& key : store.histogram_keys(run)) {
        const size_t slash = key.find('/');
        const std::string_view family = std::string_view(key).substr(0, slash);
        // Weight histograms are per parameter ("weight/fc1.weight"), not per layer.
        if (slash != std::string::npos && (family == "activation" || family == "gradient"))
            names.insert(key.substr(slash + 1));
    }
    std::vector<RecordedLayer> layers;
    for (auto& layer : model_layers(store.run(run).project_json, run))
        if (names.erase(layer.name)) layers.push_back(std::move(layer));
    for (const std::string& name : names)
        layers.push_back({name, {}});
    return layers;
}

std::vector<RecordedLayer> layers_with_feature_maps(const store::RunStore& store, int64_t run) {
    const std::vector<std::string> names = store.feature_map_layers(run);
    std::vector<RecordedLayer> layers;
    if (names.empty()) return layers;
    std::map<std::string, std::string> kinds;
    for (auto& layer : model_layers(store.run(run).project_json, run))
        kinds.emplace(std::move(layer.name), std::move(layer.kind));
    for (const std::string& name : names) {
        const auto kind = kinds.find(name);
        layers.push_back({name, kind == kinds.end() ? std::string() : kind->second});
    }
    return layers;
}

std::optional<int64_t> feature_maps_interval(const store::RunStore& store, int64_t run) {
    try {
        return io::parse_project(store.run(run).project_json, "run " + std::to_string(run))
            .train.capture.feature_maps_every;
    } catch (const store::StoreError&) {
        throw; // the store itself failed: the caller says so
    } catch (const Error&) {
        return std::nullopt; // a snapshot this build cannot read (a missing plugin, ...)
    }
}

ChannelStats channel_stats(const store::FeatureMap& map, int64_t example, int64_t channel) {
    ChannelStats stats;
    if (example < 0 || example >= map.examples || channel < 0 || channel >= map.channels)
        throw Error("channel_stats: example " + std::to_string(example) + ", channel " +
                    std::to_string(channel) + " is outside the map's " +
                    std::to_string(map.examples) + " examples x " + std::to_string(map.channels) +
                    " channels");
    const size_t plane = size_t(map.height * map.width);
    const float* values = map.values.data() + size_t(example * map.channels + channel) * plane;
    double low = std::numeric_limits<double>::infinity(), high = -low, sum = 0;
    int64_t finite = 0;
    for (size_t i = 0; i < plane; ++i) {
        const double v = values[i];
        if (!std::isfinite(v)) {
            ++stats.nonfinite;
            continue;
        }
        low = std::min(low, v);
        high = std::max(high, v);
        sum += v;
        ++finite;
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    stats.min = finite ? low : nan;
    stats.max = finite ? high : nan;
    stats.mean = finite ? sum / double(finite) : nan;
    return stats;
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
