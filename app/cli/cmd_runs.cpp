// myelin runs list | show | layers | export-csv | delete: the run store from the terminal.
#include <myelin/error.h>
#include <myelin/store/run_store.h>
#include <myelin/train/layer_inspection.h>
#include <myelin/train/lr_finder.h>

#include "cli_common.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
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

} // namespace

int cmd_runs(const std::vector<std::string_view>& raw) {
    Args args(raw, {"--store", "--step"}, {"--wide", "--all"});
    const auto& pos = args.positional();
    if (pos.empty())
        throw UsageError{
            "runs: list, show RUN, layers RUN [--step N], export-csv RUN FILE or delete RUN"};
    const std::string& action = pos[0];
    auto path = args.get("--store").value_or(store::default_store_path().string());
    if (!std::filesystem::exists(path)) {
        std::fprintf(stderr, "myelin: no run store at %s (train a project first)\n", path.c_str());
        return kExitError;
    }
    store::RunStore store = store::RunStore::open(path);
    if (action == "list") {
        if (pos.size() != 1) throw UsageError{"runs list takes no arguments"};
        auto runs = store.list_runs();
        std::map<int64_t, std::vector<store::Artifact>> artifacts; // of parents, read once each
        std::printf("%5s  %-24s %-11s %-10s %-16s %s\n", "id", "name", "status", "parent",
                    "started", "metrics");
        int64_t hidden = 0;
        for (const auto& r : runs) {
            // Learning-rate range tests are runs of their own kind: listed with --all.
            if (!args.flag("--all") &&
                std::find(r.run.tags.begin(), r.run.tags.end(), std::string(train::kLrFindTag)) !=
                    r.run.tags.end()) {
                ++hidden;
                continue;
            }
            std::string metrics;
            for (const char* key : kListed)
                for (const auto& m : r.latest_metrics)
                    if (m.key == key) {
                        char buffer[64];
                        std::snprintf(buffer, sizeof buffer, "%s%s=%.4f",
                                      metrics.empty() ? "" : " ", key, m.value);
                        metrics += buffer;
                    }
            std::printf("%5lld  %-24.24s %-11s %-10s %-16s %s\n", (long long)r.run.id,
                        r.run.name.c_str(), std::string(store::status_name(r.run.status)).c_str(),
                        parent_text(store, r.run, artifacts).c_str(),
                        time_text(r.run.started_at).c_str(), metrics.c_str());
        }
        if (runs.empty()) std::printf("(no runs)\n");
        if (hidden > 0)
            std::printf("(%lld learning-rate range test(s) not listed: --all lists them)\n",
                        (long long)hidden);
        return kExitOk;
    }
    if (action == "show") {
        if (pos.size() != 2) throw UsageError{"runs show RUN"};
        store::Run r = store.run(run_id(pos[1]));
        std::printf("run %lld \"%s\": %s\n", (long long)r.id, r.name.c_str(),
                    std::string(store::status_name(r.status)).c_str());
        std::printf("started %s", time_text(r.started_at).c_str());
        if (r.ended_at) std::printf(", ended %s", time_text(*r.ended_at).c_str());
        std::printf(" on %s (%s, %d threads)\n", r.host.c_str(), r.device.c_str(), r.threads);
        auto params = store.params(r.id);
        if (auto from = params.find("fork.from"); from != params.end())
            std::printf("forked from run %s (%s)\n", from->second.c_str(),
                        r.parent_checkpoint.c_str());
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
        auto latest = store.latest_metrics(r.id);
        if (!latest.empty()) {
            std::printf("latest metrics:\n");
            for (const auto& m : latest)
                if (m.key.find('/') == std::string::npos) // per-layer series are many: skip
                    std::printf("  %-24s %12.6g  (step %lld)\n", m.key.c_str(), m.value,
                                (long long)m.step);
        }
        // One line: the maps themselves are for the studio's Feature Maps tab.
        const auto captures = store.feature_map_capture_steps(r.id);
        if (!captures.empty()) {
            std::string layers;
            for (const auto& layer : store.feature_map_layers(r.id))
                layers += (layers.empty() ? "" : ", ") + layer;
            std::printf("feature maps: %zu capture%s, steps %lld to %lld, layers %s\n",
                        captures.size(), captures.size() == 1 ? "" : "s",
                        (long long)captures.front(), (long long)captures.back(), layers.c_str());
        }
        auto events = store.events(r.id);
        if (!events.empty()) {
            std::printf("events:\n");
            for (const auto& e : events)
                std::printf("  step %lld %s%s: %s\n", (long long)e.step, e.kind.c_str(),
                            e.layer.empty() ? "" : (" in " + e.layer).c_str(), e.message.c_str());
        }
        auto artifacts = store.artifacts(r.id);
        if (!artifacts.empty()) {
            std::printf("artifacts:\n");
            for (const auto& a : artifacts)
                std::printf("  %s step %lld: %s\n", a.kind.c_str(), (long long)a.step,
                            a.path.string().c_str());
        }
        return kExitOk;
    }
    if (action == "layers") {
        if (pos.size() != 2) throw UsageError{"runs layers RUN [--step N]"};
        const int64_t id = run_id(pos[1]);
        const std::optional<int64_t> step = args.get_int("--step", 0);
        store::Run r = store.run(id);
        std::printf("run %lld \"%s\": %s\n", (long long)r.id, r.name.c_str(),
                    std::string(store::status_name(r.status)).c_str());
        std::fputs(train::format_layer_stats(train::layer_stats_at(store, id, step)).c_str(),
                   stdout);
        return kExitOk;
    }
    if (action == "export-csv") {
        if (pos.size() != 3) throw UsageError{"runs export-csv RUN FILE [--wide]"};
        store.export_metrics_csv(run_id(pos[1]), pos[2],
                                 args.flag("--wide") ? store::CsvLayout::Wide
                                                     : store::CsvLayout::Long);
        std::printf("wrote %s\n", pos[2].c_str());
        return kExitOk;
    }
    if (action == "delete") {
        if (pos.size() != 2) throw UsageError{"runs delete RUN"};
        auto result = store.delete_run(run_id(pos[1]));
        std::printf("deleted run %s (%zu file(s) removed)\n", pos[1].c_str(),
                    result.removed_files.size());
        for (const auto& kept : result.kept_files)
            std::printf("  kept %s\n", kept.c_str());
        return kExitOk;
    }
    throw UsageError{"runs: unknown action '" + action +
                     "' (list, show, layers, export-csv, delete)"};
}

} // namespace myelin::cli
