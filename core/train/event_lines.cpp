// Training events as JSON lines (event_lines.h): the writer and the reader, one function pair
// per payload.
#include <myelin/error.h>
#include <myelin/train/event_lines.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace myelin::train {

namespace {

using nlohmann::json;

// JSON has no NaN or infinity; a diverging loss must still travel.
json number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
}

[[noreturn]] void malformed(const std::string& what) {
    throw Error("training event line: " + what);
}

const json& field(const json& j, const char* name) {
    auto it = j.find(name);
    if (it == j.end()) malformed(std::string("no field '") + name + "'");
    return *it;
}

double read_number(const json& v, const char* name) {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
        const std::string& s = v.get_ref<const std::string&>();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
    }
    malformed(std::string("'") + name + "' is not a number");
}

double get_double(const json& j, const char* name) {
    return read_number(field(j, name), name);
}

int64_t get_int(const json& j, const char* name) {
    const json& v = field(j, name);
    if (!v.is_number_integer()) malformed(std::string("'") + name + "' is not an integer");
    return v.get<int64_t>();
}

std::string get_string(const json& j, const char* name) {
    const json& v = field(j, name);
    if (!v.is_string()) malformed(std::string("'") + name + "' is not a string");
    return v.get<std::string>();
}

bool get_bool(const json& j, const char* name) {
    const json& v = field(j, name);
    if (!v.is_boolean()) malformed(std::string("'") + name + "' is not true or false");
    return v.get<bool>();
}

std::optional<std::string> get_optional_string(const json& j, const char* name) {
    auto it = j.find(name);
    if (it == j.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) malformed(std::string("'") + name + "' is not a string");
    return it->get<std::string>();
}

json metrics_json(const MetricMap& m) {
    json out = json::object();
    for (const auto& [k, v] : m)
        out[k] = number(v);
    return out;
}

MetricMap read_metrics(const json& j, const char* name) {
    const json& v = field(j, name);
    if (!v.is_object()) malformed(std::string("'") + name + "' is not an object");
    MetricMap out;
    for (auto it = v.begin(); it != v.end(); ++it)
        out[it.key()] = read_number(it.value(), name);
    return out;
}

const char* status_name(RunStatus s) {
    return run_status_name(s);
}

RunStatus read_status(const std::string& s) {
    if (s == "finished") return RunStatus::Finished;
    if (s == "stopped") return RunStatus::Stopped;
    if (s == "failed") return RunStatus::Failed;
    malformed("unknown run status '" + s + "'");
}

// --- payloads: to JSON ----------------------------------------------------------------------

void write(json& j, const RunStarted& e) {
    j["run_name"] = e.run_name;
    j["epochs"] = e.epochs;
    j["steps_per_epoch"] = e.steps_per_epoch;
    j["start_epoch"] = e.start_epoch;
    j["start_step"] = e.start_step;
}

void write(json& j, const StepMetrics& e) {
    j["epoch"] = e.epoch;
    j["step"] = e.step;
    j["loss"] = number(e.loss);
    j["lr"] = number(e.lr);
    j["samples_per_second"] = number(e.samples_per_second);
    json layers = json::array();
    for (const LayerStats& l : e.layers)
        layers.push_back({{"layer", l.layer},
                          {"grad_norm", number(l.grad_norm)},
                          {"weight_norm", number(l.weight_norm)},
                          {"update_ratio", number(l.update_ratio)},
                          {"grad_mean_abs", number(l.grad_mean_abs)},
                          {"grad_max_abs", number(l.grad_max_abs)}});
    j["layers"] = std::move(layers);
    if (e.grad_scale) j["grad_scale"] = number(*e.grad_scale);
    if (e.step_skipped) j["step_skipped"] = true;
}

void write(json& j, const EpochMetrics& e) {
    j["epoch"] = e.epoch;
    j["step"] = e.step;
    j["train"] = metrics_json(e.train);
    j["validation"] = metrics_json(e.validation);
    j["confusion"] = {{"num_classes", e.confusion.num_classes},
                      {"counts", e.confusion.counts},
                      {"class_names", e.confusion.class_names}};
}

void write(json& j, const CheckpointSaved& e) {
    j["path"] = e.path;
    j["epoch"] = e.epoch;
    j["step"] = e.step;
    j["is_best"] = e.is_best;
}

void write(json& j, const Progress& e) {
    j["epoch"] = e.epoch;
    j["epochs"] = e.epochs;
    j["step_in_epoch"] = e.step_in_epoch;
    j["steps_per_epoch"] = e.steps_per_epoch;
    j["step"] = e.step;
    j["total_steps"] = e.total_steps;
    j["samples_per_second"] = number(e.samples_per_second);
    j["eta_seconds"] = number(e.eta_seconds);
}

void write(json& j, const LogMessage& e) {
    j["level"] = e.level == LogLevel::Warning ? "warning" : "info";
    j["text"] = e.text;
}

void write(json& j, const RunError& e) {
    j["message"] = e.message;
    j["epoch"] = e.epoch;
    j["step"] = e.step;
    if (e.module) j["module"] = *e.module;
    if (e.stopped) j["stopped"] = true;
}

void write(json& j, const BreakpointFired& e) {
    j["condition"] = e.condition;
    j["message"] = e.message;
    if (e.layer) j["layer"] = *e.layer;
    j["epoch"] = e.epoch;
    j["step"] = e.step;
    j["paused"] = e.paused;
}

void write(json& j, const RunChanged& e) {
    j["step"] = e.step;
    j["what"] = e.what;
    if (!e.frozen.empty()) {
        json layers = json::object();
        for (const auto& [layer, frozen] : e.frozen)
            layers[layer] = frozen;
        j["frozen"] = std::move(layers);
    }
}

void write(json& j, const Finished& e) {
    j["status"] = status_name(e.status);
    j["epoch"] = e.epoch;
    j["step"] = e.step;
}

// --- payloads: from JSON --------------------------------------------------------------------

std::optional<EventPayload> read_payload(const std::string& kind, const json& j) {
    if (kind == "RunStarted")
        return RunStarted{get_string(j, "run_name"), get_int(j, "epochs"),
                          get_int(j, "steps_per_epoch"), get_int(j, "start_epoch"),
                          get_int(j, "start_step")};
    if (kind == "StepMetrics") {
        StepMetrics e{get_int(j, "epoch"),
                      get_int(j, "step"),
                      get_double(j, "loss"),
                      get_double(j, "lr"),
                      get_double(j, "samples_per_second"),
                      {},
                      std::nullopt,
                      false};
        if (j.contains("grad_scale")) e.grad_scale = get_double(j, "grad_scale");
        if (j.contains("step_skipped")) {
            if (!j["step_skipped"].is_boolean()) malformed("'step_skipped' is not true or false");
            e.step_skipped = j["step_skipped"].get<bool>();
        }
        const json& layers = field(j, "layers");
        if (!layers.is_array()) malformed("'layers' is not a list");
        for (const json& l : layers)
            e.layers.push_back({get_string(l, "layer"), get_double(l, "grad_norm"),
                                get_double(l, "weight_norm"), get_double(l, "update_ratio"),
                                get_double(l, "grad_mean_abs"), get_double(l, "grad_max_abs")});
        return e;
    }
    if (kind == "EpochMetrics") {
        EpochMetrics e{get_int(j, "epoch"),
                       get_int(j, "step"),
                       read_metrics(j, "train"),
                       read_metrics(j, "validation"),
                       {}};
        const json& c = field(j, "confusion");
        e.confusion.num_classes = get_int(c, "num_classes");
        try {
            e.confusion.counts = field(c, "counts").get<std::vector<int64_t>>();
            e.confusion.class_names = field(c, "class_names").get<std::vector<std::string>>();
        } catch (const json::exception&) {
            malformed("'confusion' has counts or class names of the wrong type");
        }
        const int64_t n = e.confusion.num_classes;
        if (n < 0 || int64_t(e.confusion.counts.size()) != n * n)
            malformed("'confusion' has " + std::to_string(e.confusion.counts.size()) +
                      " counts for " + std::to_string(n) + " classes");
        return e;
    }
    if (kind == "CheckpointSaved")
        return CheckpointSaved{get_string(j, "path"), get_int(j, "epoch"), get_int(j, "step"),
                               get_bool(j, "is_best")};
    if (kind == "Progress")
        return Progress{get_int(j, "epoch"),
                        get_int(j, "epochs"),
                        get_int(j, "step_in_epoch"),
                        get_int(j, "steps_per_epoch"),
                        get_int(j, "step"),
                        get_int(j, "total_steps"),
                        get_double(j, "samples_per_second"),
                        get_double(j, "eta_seconds")};
    if (kind == "Log") {
        const std::string level = get_string(j, "level");
        if (level != "info" && level != "warning") malformed("unknown log level '" + level + "'");
        return LogMessage{level == "warning" ? LogLevel::Warning : LogLevel::Info,
                          get_string(j, "text")};
    }
    if (kind == "Error")
        return RunError{get_string(j, "message"), get_int(j, "epoch"), get_int(j, "step"),
                        get_optional_string(j, "module"),
                        j.contains("stopped") && get_bool(j, "stopped")};
    if (kind == "Breakpoint")
        return BreakpointFired{
            get_string(j, "condition"), get_string(j, "message"), get_optional_string(j, "layer"),
            get_int(j, "epoch"),        get_int(j, "step"),       get_bool(j, "paused")};
    if (kind == "Finished")
        return Finished{read_status(get_string(j, "status")), get_int(j, "epoch"),
                        get_int(j, "step")};
    if (kind == "Changed") {
        RunChanged change{get_int(j, "step"), get_string(j, "what")};
        if (auto it = j.find("frozen"); it != j.end() && it->is_object())
            for (const auto& [layer, frozen] : it->items())
                if (frozen.is_boolean()) change.frozen.emplace_back(layer, frozen.get<bool>());
        return change;
    }
    return std::nullopt;
}

} // namespace

bool event_line_carries(EventKind kind) {
    switch (kind) {
    case EventKind::TensorSummary:
    case EventKind::FeatureMap:
    case EventKind::TimeGradient:
        return false;
    default:
        return true;
    }
}

std::string event_line(const Event& event) {
    if (!event_line_carries(event.kind())) return {};
    json j;
    j["event"] = event_kind_name(event.kind());
    j["time"] = number(event.wall_time);
    std::visit(
        [&](const auto& payload) {
            using P = std::decay_t<decltype(payload)>;
            if constexpr (!std::is_same_v<P, TensorSummaryEvent> &&
                          !std::is_same_v<P, FeatureMapEvent> &&
                          !std::is_same_v<P, TimeGradientEvent>)
                write(j, payload);
        },
        event.payload);
    // Invalid UTF-8 (a file name in a message) is replaced rather than refused.
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string run_created_line(const RunCreatedLine& run) {
    json j{{"event", "RunCreated"}, {"run", run.run_id}, {"store", run.store_path}};
    return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<EventLine> parse_event_line(std::string_view line) {
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r'))
        line.remove_suffix(1);
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] != '{') return std::nullopt;
    const json j = json::parse(line.begin(), line.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    const std::string kind = get_string(j, "event");
    EventLine out;
    if (kind == "RunCreated") {
        out.run = RunCreatedLine{get_int(j, "run"), get_string(j, "store")};
        return out;
    }
    std::optional<EventPayload> payload = read_payload(kind, j);
    if (!payload) return std::nullopt;
    out.event.emplace(std::move(*payload), get_double(j, "time"));
    return out;
}

} // namespace myelin::train
