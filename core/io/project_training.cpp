// The project file's "training" section: reading (every field checked, errors naming the key)
// and writing (every field in a fixed order; optional keys only when they differ from the
// default, so older files stay byte for byte the same).
#include <myelin/cuda.h>
#include <myelin/error.h>

#include "project_json.h"

namespace myelin::io {

using spec::TrainSpec;

std::string detail::read_word(const Reader& r, const std::string& key,
                              const std::vector<std::string>& words) {
    std::string v = r.at(key).str();
    std::string list;
    for (const std::string& w : words) {
        if (v == w) return v;
        list += (list.empty() ? "" : ", ") + w;
    }
    r.at(key).fail("expected one of " + list + ", got \"" + v + "\"");
}

TrainSpec detail::read_train(const Reader& r) {
    r.only({"loss",
            "optimizer",
            "scheduler",
            "scheduler_interval",
            "plateau_metric",
            "epochs",
            "accumulation_steps",
            "clip_grad_norm",
            "clip_grad_value",
            "precision",
            "device",
            "seed",
            "validate_every_steps",
            "threads",
            "flush_denormal",
            "deterministic",
            "allow_tf32",
            "init_weights",
            "early_stopping",
            "checkpoints",
            "capture",
            "distributed"});
    TrainSpec t;
    t.loss = read_choice(r.at("loss"), spec::Family::Loss);
    t.optimizer = read_choice(r.at("optimizer"), spec::Family::Optimizer);
    if (r.has("scheduler") && !r.at("scheduler").value().is_null())
        t.scheduler = read_choice(r.at("scheduler"), spec::Family::Scheduler);
    t.scheduler_interval = read_setting(r, "scheduler_interval", t.scheduler_interval);
    t.plateau_metric = r.str_or("plateau_metric", t.plateau_metric);
    t.epochs = r.int_or("epochs", t.epochs, 1);
    t.accumulation_steps = r.int_or("accumulation_steps", t.accumulation_steps, 1);
    auto positive_or_null = [&](const char* key) -> std::optional<double> {
        if (!r.has(key) || r.at(key).value().is_null()) return std::nullopt;
        double v = r.at(key).number();
        if (!(v > 0)) r.at(key).fail("expected a number > 0 (or null for none)");
        return v;
    };
    t.clip_grad_norm = positive_or_null("clip_grad_norm");
    t.clip_grad_value = positive_or_null("clip_grad_value");
    t.precision = read_setting(r, "precision", t.precision);
    if (r.has("device")) {
        t.device = r.at("device").str();
        try {
            parse_device(t.device);
        } catch (const Error&) {
            r.at("device").fail("expected \"cpu\", \"cuda\" or \"cuda:N\" (N = 0, 1, ...), got \"" +
                                t.device + "\"");
        }
    }
    t.seed = uint64_t(r.int_or("seed", 0, 0));
    t.validate_every_steps = r.int_or("validate_every_steps", 0, 0);
    t.threads = int(r.int_or("threads", 0, 0));
    t.flush_denormal = r.bool_or("flush_denormal", false);
    t.deterministic = r.bool_or("deterministic", false);
    t.allow_tf32 = r.bool_or("allow_tf32", false);
    t.init_weights = r.str_or("init_weights", "");
    if (r.has("early_stopping")) {
        Reader e = r.at("early_stopping");
        e.only({"enabled", "metric", "mode", "patience", "min_delta"});
        t.early_stopping.enabled = e.bool_or("enabled", false);
        t.early_stopping.metric = e.str_or("metric", t.early_stopping.metric);
        t.early_stopping.mode = read_setting(e, "mode", t.early_stopping.mode);
        t.early_stopping.patience = e.int_or("patience", t.early_stopping.patience, 1);
        t.early_stopping.min_delta = e.number_or("min_delta", 0.0);
        if (t.early_stopping.min_delta < 0) e.at("min_delta").fail("expected a number >= 0");
    }
    if (r.has("checkpoints")) {
        Reader c = r.at("checkpoints");
        c.only({"every_epochs", "keep_best", "keep_last"});
        t.checkpoints.every_epochs = c.int_or("every_epochs", 1, 0);
        t.checkpoints.keep_best = c.bool_or("keep_best", true);
        t.checkpoints.keep_last = c.int_or("keep_last", 2, 1);
    }
    if (r.has("capture")) {
        Reader c = r.at("capture");
        c.only({"layer_norms", "layer_norms_every", "summaries_every", "feature_maps_every",
                "layers"});
        t.capture.layer_norms = c.bool_or("layer_norms", true);
        t.capture.layer_norms_every = c.int_or("layer_norms_every", 1, 1);
        t.capture.summaries_every = c.int_or("summaries_every", 100, 0);
        t.capture.feature_maps_every = c.int_or("feature_maps_every", 500, 0);
        if (c.has("layers")) {
            Reader l = c.at("layers");
            for (size_t i = 0; i < l.array_size(); ++i)
                t.capture.layers.push_back(l.at(i).str());
        }
    }
    if (r.has("distributed")) r.at("distributed").only({"sync_batchnorm"});
    t.distributed.sync_batchnorm =
        r.has("distributed") && r.at("distributed").bool_or("sync_batchnorm", false);
    return t;
}

detail::json detail::write_train(const TrainSpec& t) {
    json o = json::object();
    o["loss"] = write_choice(t.loss, spec::Family::Loss);
    o["optimizer"] = write_choice(t.optimizer, spec::Family::Optimizer);
    o["scheduler"] =
        t.scheduler ? write_choice(*t.scheduler, spec::Family::Scheduler) : json(nullptr);
    o["scheduler_interval"] = spec::name_of(t.scheduler_interval);
    o["plateau_metric"] = t.plateau_metric;
    o["epochs"] = t.epochs;
    o["accumulation_steps"] = t.accumulation_steps;
    o["clip_grad_norm"] = t.clip_grad_norm ? json(*t.clip_grad_norm) : json(nullptr);
    o["clip_grad_value"] = t.clip_grad_value ? json(*t.clip_grad_value) : json(nullptr);
    o["precision"] = spec::name_of(t.precision);
    if (t.device != "cpu") o["device"] = t.device; // files without it stay as they were
    o["seed"] = t.seed;
    o["validate_every_steps"] = t.validate_every_steps;
    o["threads"] = t.threads;
    if (t.flush_denormal) o["flush_denormal"] = true; // files without it stay as they were
    if (t.deterministic) o["deterministic"] = true;
    if (t.allow_tf32) o["allow_tf32"] = true;
    if (!t.init_weights.empty()) o["init_weights"] = t.init_weights;
    json e = json::object();
    e["enabled"] = t.early_stopping.enabled;
    e["metric"] = t.early_stopping.metric;
    e["mode"] = spec::name_of(t.early_stopping.mode);
    e["patience"] = t.early_stopping.patience;
    e["min_delta"] = t.early_stopping.min_delta;
    o["early_stopping"] = std::move(e);
    json c = json::object();
    c["every_epochs"] = t.checkpoints.every_epochs;
    c["keep_best"] = t.checkpoints.keep_best;
    c["keep_last"] = t.checkpoints.keep_last;
    o["checkpoints"] = std::move(c);
    json cap = json::object();
    cap["layer_norms"] = t.capture.layer_norms;
    cap["layer_norms_every"] = t.capture.layer_norms_every;
    cap["summaries_every"] = t.capture.summaries_every;
    cap["feature_maps_every"] = t.capture.feature_maps_every;
    cap["layers"] = t.capture.layers;
    o["capture"] = std::move(cap);
    if (t.distributed.sync_batchnorm) o["distributed"] = json{{"sync_batchnorm", true}};
    return o;
}

} // namespace myelin::io
