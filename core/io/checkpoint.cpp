#include <myelin/error.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/json_limits.h>
#include <myelin/io/safetensors.h>

#include "table_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>

#include <cmath>
#include <limits>
#include <type_traits>
#include <variant>

namespace myelin::io {

using json = nlohmann::ordered_json;

namespace {

const std::string kOptimizerPrefix = "optimizer.state.";

// JSON has no inf/nan: they are written as text (number_of reads them back).
const char* number_text(double v) {
    return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
}

json options_json(const optim::Options& options) {
    json o = json::object();
    for (const auto& [k, v] : options)
        o[k] = std::isfinite(v) ? json(v) : json(number_text(v));
    return o;
}

double number_of(const json& v, const std::string& where) {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
        std::string s = v.get<std::string>();
        if (s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-inf") return -std::numeric_limits<double>::infinity();
        if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    }
    throw Error(where + ": expected a number");
}

json scheduler_json(const optim::SchedulerState& s) {
    json o = json::object();
    o["scalars"] = options_json(s.scalars);
    json lists = json::object();
    for (const auto& [k, v] : s.lists) {
        json a = json::array();
        for (double x : v)
            a.push_back(std::isfinite(x) ? json(x)
                                         : json(std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf")));
        lists[k] = std::move(a);
    }
    o["lists"] = std::move(lists);
    json children = json::array();
    for (const auto& c : s.children)
        children.push_back(scheduler_json(c));
    o["children"] = std::move(children);
    return o;
}

optim::SchedulerState scheduler_from(const json& o, const std::string& where) {
    if (!o.is_object()) throw Error(where + ": expected an object");
    optim::SchedulerState s;
    for (const char* key : {"scalars", "lists", "children"})
        if (!o.contains(key)) throw Error(where + ": missing '" + key + "'");
    if (!o["scalars"].is_object() || !o["lists"].is_object() || !o["children"].is_array())
        throw Error(where + ": malformed");
    for (auto it = o["scalars"].begin(); it != o["scalars"].end(); ++it)
        s.scalars[it.key()] = number_of(*it, where + ".scalars." + it.key());
    for (auto it = o["lists"].begin(); it != o["lists"].end(); ++it) {
        if (!it->is_array()) throw Error(where + ".lists." + it.key() + ": expected an array");
        for (const auto& x : *it)
            s.lists[it.key()].push_back(number_of(x, where + ".lists." + it.key()));
    }
    for (size_t i = 0; i < o["children"].size(); ++i)
        s.children.push_back(
            scheduler_from(o["children"][i], where + ".children[" + std::to_string(i) + "]"));
    return s;
}

const json& field(const json& o, const char* key, const std::string& where) {
    if (!o.is_object() || !o.contains(key)) throw Error(where + ": missing '" + key + "'");
    return o[key];
}

int64_t integer_of(const json& o, const char* key, const std::string& where, int64_t min = 0) {
    const json& v = field(o, key, where);
    if (!v.is_number_integer() || v.get<int64_t>() < min)
        throw Error(where + "." + key + ": expected an integer >= " + std::to_string(min));
    return v.get<int64_t>();
}

// --- the description (CheckpointDescription) ---

json attr_json(const graph::AttrValue& value) {
    return std::visit(
        [](const auto& v) -> json {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::monostate>) {
                return nullptr;
            } else if constexpr (std::is_same_v<T, graph::NumberTable>) {
                return table_json<json>(v);
            } else {
                return v;
            }
        },
        value);
}

graph::AttrValue attr_from(const json& v, const std::string& where) {
    if (v.is_null()) return std::monostate{};
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) return v.get<std::string>();
    if (v.is_array()) {
        const bool all_integers =
            std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_number_integer(); });
        if (!all_integers) {
            graph::NumberTable table;
            for (const auto& x : v) {
                if (!x.is_number()) throw Error(where + ": expected a list of numbers");
                table.by_position.push_back(x.get<double>());
            }
            return table;
        }
        std::vector<int64_t> out;
        for (const auto& x : v)
            out.push_back(x.get<int64_t>());
        return out;
    }
    graph::NumberTable table;
    for (auto it = v.begin(); it != v.end(); ++it) {
        if (!it.value().is_number()) throw Error(where + "." + it.key() + ": expected a number");
        table.by_name.emplace_back(it.key(), it.value().get<double>());
    }
    return table;
}

void describe(StringPairs& metadata, const Checkpoint& c) {
    const CheckpointDescription& d = c.description;
    metadata.emplace_back("step", std::to_string(c.position.step));
    if (!d.project_dir.empty()) metadata.emplace_back("project_dir", d.project_dir);
    if (d.run_id > 0) metadata.emplace_back("run_id", std::to_string(d.run_id));
    if (!d.class_names.empty()) metadata.emplace_back("class_names", json(d.class_names).dump());
    if (!d.input_shape.empty()) metadata.emplace_back("input_shape", json(d.input_shape).dump());
    json steps = json::array();
    for (const auto& t : d.preprocessing) {
        json options = json::object();
        for (const auto& [name, value] : t.options.items())
            options[name] = attr_json(value);
        steps.push_back(json{{"kind", t.kind}, {"options", options}});
    }
    metadata.emplace_back("preprocessing", steps.dump());
    if (!d.metrics.empty()) {
        json metrics = json::object();
        for (const auto& [name, value] : d.metrics)
            metrics[name] = std::isfinite(value) ? json(value) : json(number_text(value));
        metadata.emplace_back("metrics", metrics.dump());
        metadata.emplace_back("metrics_step", std::to_string(d.metrics_step));
    }
    if (const auto& t = d.text_encoding)
        metadata.emplace_back("text_encoding", json{{"level", data::to_string(t->level)},
                                                    {"lowercase", t->lowercase},
                                                    {"max_length", t->max_length},
                                                    {"vocabulary", t->vocabulary}}
                                                   .dump());
}

data::TextEncoding text_encoding_from(const json& v, const std::string& where) {
    const std::string w = where + ": metadata 'text_encoding'";
    if (!v.is_object()) throw Error(w + ": expected an object");
    const json& level = field(v, "level", w);
    const json& lowercase = field(v, "lowercase", w);
    const json& max_length = field(v, "max_length", w);
    const json& vocabulary = field(v, "vocabulary", w);
    if (!level.is_string() || !lowercase.is_boolean() || !max_length.is_number_integer() ||
        !vocabulary.is_array())
        throw Error(w + ": expected level (text), lowercase (bool), max_length (integer), "
                        "vocabulary (list)");
    data::TextEncoding e;
    try {
        e.level = data::token_level_from_string(level.get<std::string>());
        e.lowercase = lowercase.get<bool>();
        e.max_length = max_length.get<int64_t>();
        for (const auto& t : vocabulary) {
            if (!t.is_string()) throw Error("vocabulary: expected strings");
            e.vocabulary.push_back(t.get<std::string>());
        }
        data::TextEncoder check(e); // refuses a vocabulary the encoder could not use
    } catch (const Error& error) {
        throw Error(w + ": " + error.what());
    }
    return e;
}

template <typename MetaJson>
CheckpointDescription description_from(const SafetensorsFile& file, MetaJson&& meta_json,
                                       const std::string& where) {
    CheckpointDescription d;
    if (auto dir = file.metadata_value("project_dir")) d.project_dir = *dir;
    auto integer = [&](const char* key, int64_t& out) {
        if (auto v = meta_json(key)) {
            if (!v->is_number_integer())
                throw Error(where + ": metadata '" + key + "': expected an integer");
            out = v->template get<int64_t>();
        }
    };
    integer("run_id", d.run_id);
    integer("metrics_step", d.metrics_step);
    if (auto names = meta_json("class_names")) {
        if (!names->is_array()) throw Error(where + ": metadata 'class_names': expected a list");
        for (const auto& n : *names) {
            if (!n.is_string()) throw Error(where + ": metadata 'class_names': expected strings");
            d.class_names.push_back(n.template get<std::string>());
        }
    }
    if (auto shape = meta_json("input_shape")) {
        if (!shape->is_array()) throw Error(where + ": metadata 'input_shape': expected a list");
        for (const auto& n : *shape) {
            if (!n.is_number_integer() || n.template get<int64_t>() < 1)
                throw Error(where + ": metadata 'input_shape': expected positive integers");
            d.input_shape.push_back(n.template get<int64_t>());
        }
    }
    if (auto steps = meta_json("preprocessing")) {
        if (!steps->is_array()) throw Error(where + ": metadata 'preprocessing': expected a list");
        for (size_t i = 0; i < steps->size(); ++i) {
            const std::string sw = where + ": preprocessing[" + std::to_string(i) + "]";
            const json& kind = field((*steps)[i], "kind", sw);
            const json& options = field((*steps)[i], "options", sw);
            if (!kind.is_string() || !options.is_object())
                throw Error(sw + ": expected {\"kind\": text, \"options\": {...}}");
            spec::Choice choice{kind.template get<std::string>(), {}};
            for (auto it = options.begin(); it != options.end(); ++it)
                choice.options.set(it.key(), attr_from(*it, sw + ".options." + it.key()));
            d.preprocessing.push_back(std::move(choice));
        }
    }
    if (auto metrics = meta_json("metrics")) {
        if (!metrics->is_object()) throw Error(where + ": metadata 'metrics': expected an object");
        for (auto it = metrics->begin(); it != metrics->end(); ++it)
            d.metrics.emplace_back(it.key(), number_of(*it, where + ": metrics." + it.key()));
    }
    if (auto text = meta_json("text_encoding")) d.text_encoding = text_encoding_from(*text, where);
    return d;
}

} // namespace

void save_checkpoint(const std::filesystem::path& path, const Checkpoint& c) {
    NamedTensors tensors = c.model;
    for (const auto& [index, state] : c.optimizer.state)
        for (const auto& [name, value] : state)
            tensors.emplace_back(kOptimizerPrefix + std::to_string(index) + "." + name, value);

    json training = json::object();
    training["epoch"] = c.position.epoch;
    training["batch_in_epoch"] = c.position.batch_in_epoch;
    training["step"] = c.position.step;
    if (c.position.world_size != 1) training["world_size"] = c.position.world_size;
    training["generator"] = c.generator_state;
    training["best_metric"] = c.best_metric ? json(*c.best_metric) : json(nullptr);
    training["bad_epochs"] = c.bad_epochs;
    training["early_stopping_updates"] = c.early_stopping_updates;

    StringPairs metadata = {{"format", kCheckpointFormat}, {"training", training.dump()}};
    if (!c.optimizer_kind.empty()) {
        json opt = json::object();
        opt["kind"] = c.optimizer_kind;
        json groups = json::array();
        for (const auto& g : c.optimizer.param_groups) {
            json gj = json::object();
            gj["options"] = options_json(g.options);
            gj["params"] = g.params;
            groups.push_back(std::move(gj));
        }
        opt["param_groups"] = std::move(groups);
        metadata.emplace_back("optimizer", opt.dump());
    }
    if (c.scheduler) metadata.emplace_back("scheduler", scheduler_json(*c.scheduler).dump());
    if (!c.project_json.empty()) metadata.emplace_back("project", c.project_json);
    if (!c.grad_scaler.empty()) {
        json scaler = json::object(); // as torch's state_dict: the counts are integers
        for (const auto& [key, value] : c.grad_scaler)
            scaler[key] = key == "growth_interval" || key == "_growth_tracker"
                              ? json(int64_t(value))
                              : json(value);
        metadata.emplace_back("grad_scaler", scaler.dump());
    }
    if (!c.quantization.empty()) metadata.emplace_back("quantization", c.quantization);
    describe(metadata, c);
    save_safetensors(path, tensors, metadata, c.int8_tensors);
}

Checkpoint load_checkpoint(const std::filesystem::path& path) {
    SafetensorsFile file = load_safetensors(path);
    const std::string where = path.string();
    auto meta_json = [&](const char* key) -> std::optional<json> {
        auto text = file.metadata_value(key);
        if (!text) return std::nullopt;
        if (auto problem = json_nesting_problem(*text); !problem.empty())
            throw Error(where + ": metadata '" + key + "' " + problem);
        try {
            return json::parse(*text);
        } catch (const json::exception& e) { // parse_error, or out_of_range for 1e999
            throw Error(where + ": metadata '" + key + "' is not valid JSON: " + e.what());
        }
    };
    auto format = file.metadata_value("format");
    if (!format)
        throw Error(where + ": not a Myelin checkpoint (no 'format' in the metadata; a plain "
                            "safetensors file of weights can be loaded as weights only)");
    if (*format != kCheckpointFormat)
        throw Error(where + ": checkpoint format '" + *format + "' is not supported (expected " +
                    kCheckpointFormat + ")");
    Checkpoint c;
    if (auto plan = meta_json("quantization")) c.quantization = plan->dump();
    c.int8_tensors = file.int8_names;
    if (!c.int8_tensors.empty() && c.quantization.empty())
        throw Error(where + ": tensor '" + c.int8_tensors[0] +
                    "' is int8 but the metadata has no 'quantization' plan that reads it");
    auto training = meta_json("training");
    if (!training) throw Error(where + ": metadata 'training' is missing");
    const std::string tw = where + ": training";
    c.position.epoch = integer_of(*training, "epoch", tw);
    c.position.batch_in_epoch = integer_of(*training, "batch_in_epoch", tw);
    c.position.step = integer_of(*training, "step", tw);
    if (training->contains("world_size")) {
        c.position.world_size = integer_of(*training, "world_size", tw);
        if (c.position.world_size < 1) throw Error(tw + ".world_size: must be at least 1");
    }
    const json& gen = field(*training, "generator", tw);
    if (!gen.is_string()) throw Error(tw + ".generator: expected a string");
    c.generator_state = gen.get<std::string>();
    const json& best = field(*training, "best_metric", tw);
    if (!best.is_null()) c.best_metric = number_of(best, tw + ".best_metric");
    c.bad_epochs = integer_of(*training, "bad_epochs", tw);
    c.early_stopping_updates = integer_of(*training, "early_stopping_updates", tw);

    std::map<int64_t, bool> state_params;
    for (auto& [name, tensor] : file.tensors) {
        if (name.rfind(kOptimizerPrefix, 0) != 0) {
            c.model.emplace_back(name, tensor);
            continue;
        }
        std::string rest = name.substr(kOptimizerPrefix.size());
        size_t dot = rest.find('.');
        char* end = nullptr;
        long long index = dot == std::string::npos ? -1 : std::strtoll(rest.c_str(), &end, 10);
        if (dot == std::string::npos || end != rest.c_str() + dot || index < 0 ||
            dot + 1 >= rest.size())
            throw Error(where + ": tensor '" + name +
                        "' is not of the form optimizer.state.<index>.<name>");
        c.optimizer.state[index][rest.substr(dot + 1)] = tensor;
    }
    if (auto opt = meta_json("optimizer")) {
        const std::string ow = where + ": optimizer";
        const json& kind = field(*opt, "kind", ow);
        if (!kind.is_string()) throw Error(ow + ".kind: expected a string");
        c.optimizer_kind = kind.get<std::string>();
        const json& groups = field(*opt, "param_groups", ow);
        if (!groups.is_array()) throw Error(ow + ".param_groups: expected an array");
        std::map<int64_t, bool> seen;
        for (size_t i = 0; i < groups.size(); ++i) {
            const std::string gw = ow + ".param_groups[" + std::to_string(i) + "]";
            optim::OptimizerStateDict::Group g;
            const json& options = field(groups[i], "options", gw);
            if (!options.is_object()) throw Error(gw + ".options: expected an object");
            for (auto it = options.begin(); it != options.end(); ++it)
                g.options[it.key()] = number_of(*it, gw + ".options." + it.key());
            const json& params = field(groups[i], "params", gw);
            if (!params.is_array()) throw Error(gw + ".params: expected an array");
            for (const auto& p : params) {
                if (!p.is_number_integer() || p.get<int64_t>() < 0 || seen[p.get<int64_t>()])
                    throw Error(gw + ".params: expected distinct parameter indices >= 0");
                seen[p.get<int64_t>()] = true;
                g.params.push_back(p.get<int64_t>());
            }
            c.optimizer.param_groups.push_back(std::move(g));
        }
        for (const auto& [index, state] : c.optimizer.state)
            if (!seen.count(index))
                throw Error(where + ": optimizer state for parameter " + std::to_string(index) +
                            " which no parameter group lists");
    } else if (!c.optimizer.state.empty()) {
        throw Error(where + ": optimizer state tensors without the 'optimizer' metadata");
    }
    if (auto s = meta_json("scheduler")) c.scheduler = scheduler_from(*s, where + ": scheduler");
    if (auto p = file.metadata_value("project")) c.project_json = *p;
    if (auto scaler = meta_json("grad_scaler")) {
        if (!scaler->is_object())
            throw Error(where + ": metadata 'grad_scaler': expected an object");
        for (auto it = scaler->begin(); it != scaler->end(); ++it)
            c.grad_scaler[it.key()] = number_of(*it, where + ": grad_scaler." + it.key());
    }
    c.description = description_from(file, meta_json, where);
    return c;
}

} // namespace myelin::io
