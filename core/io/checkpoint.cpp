#include <myelin/error.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/json_limits.h>
#include <myelin/io/safetensors.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace myelin::io {

using json = nlohmann::ordered_json;

namespace {

const std::string kOptimizerPrefix = "optimizer.state.";

json options_json(const optim::Options& options) {
    json o = json::object();
    for (const auto& [k, v] : options) {
        if (std::isfinite(v))
            o[k] = v;
        else // JSON has no inf/nan; PyTorch options rarely hold them but keep them exact
            o[k] = std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf");
    }
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
    save_safetensors(path, tensors, metadata);
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
    auto training = meta_json("training");
    if (!training) throw Error(where + ": metadata 'training' is missing");
    const std::string tw = where + ": training";
    c.position.epoch = integer_of(*training, "epoch", tw);
    c.position.batch_in_epoch = integer_of(*training, "batch_in_epoch", tw);
    c.position.step = integer_of(*training, "step", tw);
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
    return c;
}

} // namespace myelin::io
