// myelin runs list | show | layers | export-csv | delete: the run store from the terminal.
#include <myelin/error.h>
#include <myelin/store/run_store.h>
#include <myelin/train/layer_inspection.h>
#include <myelin/train/lr_finder.h>

#include "cli_common.h"
#include "cli_json.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <vector>

namespace myelin::cli {

namespace {

std::string time_text(double unix_seconds) {
    std::time_t t = std::time_t(unix_seconds);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buffer[32];
    std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M", &tm);
    return buffer;
}

int64_t run_id(const std::string& text) {
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
        throw UsageError{"expected a run id (a number), got '" + text + "'"};
    return std::stoll(text);
}

// The metrics worth a column in `runs list`, when present.
const char* const kListed[] = {"val_accuracy", "val_loss", "train_loss", "loss"};

// Where a run branched off: "#3@200" (run 3's checkpoint of step 200: a fork or a resume),
// "#3" when that checkpoint is no longer listed, "file" for a resume from a checkpoint file
// outside the store's runs (or of a deleted run), "-" for a fresh run.
std::string parent_text(store::RunStore& store, const store::Run& run,
                        std::map<int64_t, std::vector<store::Artifact>>& artifacts) {
    if (!run.parent_run) return run.parent_checkpoint.empty() ? "-" : "file";
    auto it = artifacts.find(*run.parent_run);
    if (it == artifacts.end())
        it = artifacts.emplace(*run.parent_run, store.artifacts(*run.parent_run)).first;
    std::string text = "#" + std::to_string(*run.parent_run);
    for (const auto& a : it->second)
        if (a.path == run.parent_checkpoint) return text + "@" + std::to_string(a.step);
    return text;
}

// The store --store names (else the default one); none when it does not exist (said). Read-only
// or locked by another program, it is opened for reading and that is said on stderr (a write
// then fails with the same words); damaged or newer, open throws (exit 1).
std::optional<store::RunStore> open_store(const Args& args, bool quiet = false) {
    auto path = args.get("--store").value_or(store::default_store_path().string());
    if (!std::filesystem::exists(path)) {
        std::fprintf(stderr, "myelin: no run store at %s (train a project first)\n", path.c_str());
        return std::nullopt;
    }
    store::StoreOptions options;
    options.access = store::StoreAccess::ReadWriteIfAllowed;
    auto store = store::RunStore::open(path, options);
    if (store.condition() != store::StoreProblem::None && !quiet)
        std::fprintf(stderr, "myelin: warning: %s\n", store.condition_message().c_str());
    return store;
}

bool is_lr_find(const store::Run& run) {
    return std::find(run.tags.begin(), run.tags.end(), std::string(train::kLrFindTag)) !=
           run.tags.end();
}

// The latest value and step of each metric, per-layer series ("grad_norm/fc1") left out.
nlohmann::ordered_json metrics_json(const std::vector<store::LatestMetric>& latest) {
    nlohmann::ordered_json metrics = nlohmann::ordered_json::object();
    for (const auto& m : latest)
        if (m.key.find('/') == std::string::npos)
            metrics[m.key] = {{"value", m.value}, {"step", m.step}};
    return metrics;
}

template <typename T> nlohmann::ordered_json optional_json(const std::optional<T>& value) {
    return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

nlohmann::ordered_json run_json(const store::Run& r) {
    return {{"id", r.id},
            {"name", r.name},
            {"status", std::string(store::status_name(r.status))},
            {"started_at", r.started_at},
            {"ended_at", optional_json(r.ended_at)},
            {"parent_run", optional_json(r.parent_run)},
            {"parent_step", optional_json(r.branch_step)},
            {"parent_checkpoint", r.parent_checkpoint},
            {"tags", r.tags}};
}

} // namespace

int cmd_runs_list(const Args& args) {
    auto store = open_store(args, args.flag("--ids-only")); // the completion's: no warnings
    if (!store) return kExitError;
    auto runs = store->list_runs();
    if (args.flag("--ids-only")) { // the completion's: every run, one id a line
        for (const auto& r : runs)
            std::printf("%lld\n", (long long)r.run.id);
        return kExitOk;
    }
    const bool json = args.flag("--json");
    nlohmann::ordered_json listed = nlohmann::ordered_json::array();
    std::map<int64_t, std::vector<store::Artifact>> artifacts; // of parents, read once each
    if (!json)
        std::printf("%5s  %-24s %-11s %-10s %-16s %s\n", "id", "name", "status", "parent",
                    "started", "metrics");
    int64_t hidden = 0;
    for (const auto& r : runs) {
        // Learning-rate range tests are runs of their own kind: listed with --all.
        if (!args.flag("--all") && is_lr_find(r.run)) {
            ++hidden;
            continue;
        }
        if (json) {
            nlohmann::ordered_json run = run_json(r.run);
            run["metrics"] = metrics_json(r.latest_metrics);
            listed.push_back(run);
            continue;
        }
        std::string metrics;
        for (const char* key : kListed)
            for (const auto& m : r.latest_metrics)
                if (m.key == key) {
                    char buffer[64];
                    std::snprintf(buffer, sizeof buffer, "%s%s=%.4f", metrics.empty() ? "" : " ",
                                  key, m.value);
                    metrics += buffer;
                }
        std::printf("%5lld  %-24.24s %-11s %-10s %-16s %s\n", (long long)r.run.id,
                    r.run.name.c_str(), std::string(store::status_name(r.run.status)).c_str(),
                    parent_text(*store, r.run, artifacts).c_str(),
                    time_text(r.run.started_at).c_str(), metrics.c_str());
    }
    if (json) {
        print_json({{"store", args.get("--store").value_or(store::default_store_path().string())},
                    {"runs", listed},
                    {"hidden_lr_find", hidden}});
        return kExitOk;
    }
    if (runs.empty()) std::printf("(no runs)\n");
    if (hidden > 0)
        std::printf("(%lld learning-rate range test(s) not listed: --all lists them)\n",
                    (long long)hidden);
    return kExitOk;
}

namespace {

nlohmann::ordered_json show_json(store::RunStore& store, const store::Run& r) {
    nlohmann::ordered_json doc = run_json(r);
    const auto params = store.params(r.id);
    const auto from = params.find("fork.from");
    doc["forked_from"] = from == params.end() ? nlohmann::ordered_json(nullptr)
                                              : nlohmann::ordered_json(from->second);
    doc["host"] = r.host;
    doc["device"] = r.device;
    doc["threads"] = r.threads;
    doc["error"] = r.error;
    doc["project"] = r.project_path;
    doc["note"] = r.note;
    doc["params"] = params;
    doc["metrics"] = metrics_json(store.latest_metrics(r.id));
    const auto captures = store.feature_map_capture_steps(r.id);
    doc["feature_maps"] = nullptr;
    if (!captures.empty())
        doc["feature_maps"] = {{"captures", captures.size()},
                               {"first_step", captures.front()},
                               {"last_step", captures.back()},
                               {"layers", store.feature_map_layers(r.id)}};
    nlohmann::ordered_json events = nlohmann::ordered_json::array();
    for (const auto& e : store.events(r.id))
        events.push_back(
            {{"step", e.step}, {"kind", e.kind}, {"layer", e.layer}, {"message", e.message}});
    doc["events"] = events;
    nlohmann::ordered_json artifacts = nlohmann::ordered_json::array();
    for (const auto& a : store.artifacts(r.id))
        artifacts.push_back({{"kind", a.kind}, {"step", a.step}, {"path", a.path.string()}});
    doc["artifacts"] = artifacts;
    return doc;
}

} // namespace

int cmd_runs_show(const Args& args) {
    const int64_t id = run_id(args.positional()[0]);
    auto store = open_store(args);
    if (!store) return kExitError;
    store::Run r = store->run(id);
    if (args.flag("--json")) {
        print_json(show_json(*store, r));
        return kExitOk;
    }
    std::printf("run %lld \"%s\": %s\n", (long long)r.id, r.name.c_str(),
                std::string(store::status_name(r.status)).c_str());
    std::printf("started %s", time_text(r.started_at).c_str());
    if (r.ended_at) std::printf(", ended %s", time_text(*r.ended_at).c_str());
    std::printf(" on %s (%s, %d threads)\n", r.host.c_str(), r.device.c_str(), r.threads);
    auto params = store->params(r.id);
    if (auto from = params.find("fork.from"); from != params.end())
        std::printf("forked from run %s (%s)\n", from->second.c_str(), r.parent_checkpoint.c_str());
    else if (r.parent_run)
        std::printf("resumed from run %lld (%s)\n", (long long)*r.parent_run,
                    r.parent_checkpoint.c_str());
    else if (!r.parent_checkpoint.empty())
        std::printf("resumed from %s\n", r.parent_checkpoint.c_str());
    if (!r.error.empty()) std::printf("error: %s\n", r.error.c_str());
    if (!r.project_path.empty()) std::printf("project: %s\n", r.project_path.c_str());
    if (!r.tags.empty()) {
        std::string tags;
        for (const auto& t : r.tags)
            tags += (tags.empty() ? "" : ", ") + t;
        std::printf("tags: %s\n", tags.c_str());
    }
    if (!r.note.empty()) std::printf("note: %s\n", r.note.c_str());
    if (!params.empty()) {
        std::printf("parameters:\n");
        for (const auto& [k, v] : params)
            std::printf("  %s = %s\n", k.c_str(), v.c_str());
    }
    auto latest = store->latest_metrics(r.id);
    if (!latest.empty()) {
        std::printf("latest metrics:\n");
        for (const auto& m : latest)
            if (m.key.find('/') == std::string::npos) // per-layer series are many: skip
                std::printf("  %-24s %12.6g  (step %lld)\n", m.key.c_str(), m.value,
                            (long long)m.step);
    }
    // One line: the maps themselves are for the studio's Feature Maps tab.
    const auto captures = store->feature_map_capture_steps(r.id);
    if (!captures.empty()) {
        std::string layers;
        for (const auto& layer : store->feature_map_layers(r.id))
            layers += (layers.empty() ? "" : ", ") + layer;
        std::printf("feature maps: %zu capture%s, steps %lld to %lld, layers %s\n", captures.size(),
                    captures.size() == 1 ? "" : "s", (long long)captures.front(),
                    (long long)captures.back(), layers.c_str());
    }
    auto events = store->events(r.id);
    if (!events.empty()) {
        std::printf("events:\n");
        for (const auto& e : events)
            std::printf("  step %lld %s%s: %s\n", (long long)e.step, e.kind.c_str(),
                        e.layer.empty() ? "" : (" in " + e.layer).c_str(), e.message.c_str());
    }
    auto artifacts = store->artifacts(r.id);
    if (!artifacts.empty()) {
        std::printf("artifacts:\n");
        for (const auto& a : artifacts)
            std::printf("  %s step %lld: %s\n", a.kind.c_str(), (long long)a.step,
                        a.path.string().c_str());
    }
    return kExitOk;
}

int cmd_runs_layers(const Args& args) {
    const int64_t id = run_id(args.positional()[0]);
    const std::optional<int64_t> step = args.get_int("--step", 0);
    auto store = open_store(args);
    if (!store) return kExitError;
    store::Run r = store->run(id);
    const train::LayerStatsTable table = train::layer_stats_at(*store, id, step);
    if (!args.flag("--json")) {
        std::printf("run %lld \"%s\": %s\n", (long long)r.id, r.name.c_str(),
                    std::string(store::status_name(r.status)).c_str());
        std::fputs(train::format_layer_stats(table).c_str(), stdout);
        return kExitOk;
    }
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (const train::LayerStatsRow& row : table.rows)
        layers.push_back({{"layer", row.layer.name},
                          {"kind", row.layer.kind},
                          {"grad_norm", optional_json(row.grad_norm)},
                          {"weight_norm", optional_json(row.weight_norm)},
                          {"update_ratio", optional_json(row.update_ratio)},
                          {"grad_mean_abs", optional_json(row.grad_mean_abs)},
                          {"grad_max_abs", optional_json(row.grad_max_abs)},
                          {"activation_mean", optional_json(row.activation_mean)},
                          {"activation_std", optional_json(row.activation_std)},
                          {"zero_fraction", optional_json(row.zero_fraction)},
                          {"nonfinite", optional_json(row.nonfinite)}});
    print_json(
        {{"run",
          {{"id", r.id}, {"name", r.name}, {"status", std::string(store::status_name(r.status))}}},
         {"requested_step", optional_json(table.requested_step)},
         {"norms_step", optional_json(table.norms_step)},
         {"summaries_step", optional_json(table.summaries_step)},
         {"layers", layers}});
    return kExitOk;
}

int cmd_runs_export_csv(const Args& args) {
    const auto& pos = args.positional();
    const int64_t id = run_id(pos[0]);
    auto store = open_store(args);
    if (!store) return kExitError;
    store->export_metrics_csv(
        id, pos[1], args.flag("--wide") ? store::CsvLayout::Wide : store::CsvLayout::Long);
    std::printf("wrote %s\n", pos[1].c_str());
    return kExitOk;
}

int cmd_runs_delete(const Args& args) {
    const int64_t id = run_id(args.positional()[0]);
    auto store = open_store(args);
    if (!store) return kExitError;
    auto result = store->delete_run(id);
    std::printf("deleted run %s (%zu file(s) removed)\n", args.positional()[0].c_str(),
                result.removed_files.size());
    for (const auto& kept : result.kept_files)
        std::printf("  kept %s\n", kept.c_str());
    return kExitOk;
}

} // namespace myelin::cli
