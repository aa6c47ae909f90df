// myelin: the headless command-line tool. Links only myelin_core (no Qt), so it runs on a
// cluster node without a display. Each subcommand is a thin layer over core.
#include <myelin/cuda.h>
#include <myelin/data/limits.h>
#include <myelin/device.h>
#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/io/project.h>
#include <myelin/plugin/loader.h>
#include <myelin/spec/components.h>
#include <myelin/spec/option_fields.h>
#include <myelin/train/class_weights.h>
#include <myelin/train/components.h>
#include <myelin/train/memory_estimate.h>

#include "cli_common.h"
#include "cli_json.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>

namespace myelin::cli {

namespace {

nlohmann::ordered_json layers_json(const graph::ModelSpec& model, const graph::Analysis& analysis) {
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (size_t i : analysis.order) {
        const graph::Node& n = model.nodes[i];
        const graph::NodeInfo& info = analysis.nodes[i];
        nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
        for (const graph::TensorType& t : info.outputs)
            outputs.push_back({{"shape", std::vector<int64_t>(t.shape.begin(), t.shape.end())},
                               {"dtype", dtype_name(t.dtype)}});
        if (outputs.empty() && info.output)
            outputs.push_back({{"shape", std::vector<int64_t>(info.output->shape.begin(),
                                                              info.output->shape.end())},
                               {"dtype", dtype_name(info.output->dtype)}});
        layers.push_back(
            {{"name", info.module_name.empty() ? model.display_name(n.id) : info.module_name},
             {"kind", n.kind},
             {"outputs", outputs},
             {"params", info.params},
             {"flops", info.flops},
             {"frozen", n.frozen},
             {"reachable", info.reachable}});
    }
    return layers;
}

const char* fit_name(train::MemoryFit fit) {
    switch (fit) {
    case train::MemoryFit::Fits:
        return "fits";
    case train::MemoryFit::Close:
        return "close";
    case train::MemoryFit::DoesNotFit:
        break;
    }
    return "does_not_fit";
}

nlohmann::ordered_json memory_json(const train::MemoryVerdict& memory) {
    nlohmann::ordered_json parts = nlohmann::ordered_json::array();
    for (const train::MemoryPart& p : memory.estimate.parts)
        parts.push_back({{"name", p.name},
                         {"bytes", p.bytes},
                         {"per_batch", p.per_batch},
                         {"on_device", p.on_device}});
    return {{"device", memory.estimate.device.str()},
            {"batch_size", memory.estimate.batch_size},
            {"parts", parts},
            {"total_bytes", memory.estimate.total_bytes()},
            {"free_bytes", memory.available.bytes},
            {"free_on", memory.available.where},
            {"largest_batch", memory.largest_batch},
            {"fit", fit_name(memory.fit)},
            {"message", memory.message}};
}

} // namespace

int cmd_check(const Args& args) {
    const std::string& path = args.positional()[0];
    const bool json = args.flag("--json");
    const std::optional<int64_t> batch_option = args.get_int("--batch-size", 1);
    if (batch_option && *batch_option > data::kMaxBatchSize)
        throw UsageError{"--batch-size needs an integer <= " + std::to_string(data::kMaxBatchSize) +
                         " (the limit), got '" + *args.get("--batch-size") + "'"};
    int64_t batch = batch_option.value_or(1);
    std::optional<Device> requested;
    if (auto text = args.get("--device")) {
        try {
            requested = parse_device(*text);
        } catch (const Error& e) {
            throw UsageError{std::string("--device: ") + e.what()};
        }
    }
    io::Project project;
    try {
        project = io::load_project(path);
    } catch (const Error& e) {
        std::fprintf(stderr, "myelin: error: %s\n", e.what());
        return kExitError;
    }
    auto analysis = graph::analyze(project.model, batch);
    // --json: the same facts as one document, printed once whatever the outcome.
    nlohmann::ordered_json doc = {{"project", path},
                                  {"name", project.name},
                                  {"ok", false},
                                  {"valid", analysis.ok()},
                                  {"batch_size", analysis.batch_size},
                                  {"layers", layers_json(project.model, analysis)},
                                  {"total_params", analysis.total_params},
                                  {"trainable_params", analysis.trainable_params},
                                  {"total_flops", analysis.total_flops},
                                  {"activation_bytes", analysis.total_activation_bytes}};
    nlohmann::ordered_json problems = nlohmann::ordered_json::array();
    for (const auto& p : analysis.problems)
        problems.push_back(
            {{"severity", p.severity == graph::Severity::Error ? "error" : "warning"},
             {"message", graph::describe(project.model, p)}});
    doc["problems"] = problems;
    doc["loss"] = nullptr;
    doc["memory"] = nullptr;
    const auto finish = [&](int code, const std::string& error = {}) {
        if (json) {
            doc["ok"] = code == kExitOk;
            if (!error.empty()) doc["error"] = error;
            print_json(doc);
        }
        return code;
    };
    if (!json) {
        std::printf("%s%s%s\n\n", path.c_str(), project.name.empty() ? "" : ": ",
                    project.name.c_str());
        std::fputs(graph::format_summary(project.model, analysis).c_str(), stdout);
    }
    if (!analysis.ok()) {
        std::fprintf(stderr, "myelin: %s is invalid (%zu error(s))\n", path.c_str(),
                     analysis.error_count());
        return finish(kExitError);
    }
    // What a run would train with: every option of the loss, the optimizer and the schedule,
    // defaults filled in, as their kinds describe them (spec/option_fields.h).
    {
        const spec::TrainSpec& t = project.train;
        auto component = [&](const auto& kinds, const spec::Choice& choice) {
            const auto* kind = spec::find_component(kinds, choice.kind);
            const std::string options = kind ? spec::describe_options(kind->options, choice.options)
                                             : std::string("(no such kind here)");
            return nlohmann::ordered_json{{"kind", choice.kind}, {"options", options}};
        };
        nlohmann::ordered_json training = {
            {"epochs", t.epochs},
            {"batch_size", project.data.batch_size},
            {"loss", component(spec::loss_kinds(), t.loss)},
            {"optimizer", component(spec::optimizer_kinds(), t.optimizer)},
            {"schedule", t.scheduler ? component(spec::scheduler_kinds(), *t.scheduler)
                                     : nlohmann::ordered_json(nullptr)}};
        if (!json) {
            std::printf("\ntraining: %lld epoch(s) at batch size %lld\n", (long long)t.epochs,
                        (long long)project.data.batch_size);
            for (const char* part : {"loss", "optimizer", "schedule"}) {
                const auto& c = training[part];
                if (c.is_null())
                    std::printf("  %-9s  none\n", part);
                else
                    std::printf("  %-9s  %s: %s\n", part, c["kind"].get<std::string>().c_str(),
                                c["options"].get<std::string>().c_str());
            }
        }
        doc["training"] = std::move(training);
    }
    // Class weights by name must name the data's classes: checked (reading the data) now,
    // not when training starts.
    try {
        const std::filesystem::path dir = std::filesystem::path(path).parent_path();
        const spec::LossContext context = train::loss_context_for(
            project.train, project.data, project.model, dir.empty() ? "." : dir);
        const auto weights = train::describe_loss_weights(project.train.loss, context);
        doc["loss"] = {{"kind", project.train.loss.kind}, {"weights", weights}};
        if (!json)
            for (const std::string& line : weights)
                std::printf("\nloss %s %s", project.train.loss.kind.c_str(), line.c_str());
        train::make_loss(project.train.loss, context);
    } catch (const Error& e) {
        std::fprintf(stderr, "myelin: error: %s\n", e.what());
        return finish(kExitError, e.what());
    }
    // The memory pre-flight at the batch size the run would use.
    try {
        const std::filesystem::path dir = std::filesystem::path(path).parent_path();
        const Device device = requested ? *requested : parse_device(project.train.device);
        const int64_t run_batch = batch_option ? batch : project.data.batch_size;
        const train::MemoryVerdict memory =
            train::check_training_memory(project, dir.empty() ? "." : dir, run_batch, device);
        doc["memory"] = memory_json(memory);
        if (!json) {
            std::printf("\nmemory to train at batch size %lld on %s:\n", (long long)run_batch,
                        device.str().c_str());
            for (const std::string& line : train::describe_memory(memory.estimate))
                std::printf("%s\n", line.c_str());
            if (memory.available.bytes > 0)
                std::printf("free on %s: %s; the largest batch size that fits: %lld\n",
                            memory.available.where.c_str(),
                            train::format_bytes(memory.available.bytes).c_str(),
                            (long long)memory.largest_batch);
        }
        if (memory.fit == train::MemoryFit::DoesNotFit) {
            std::fprintf(stderr, "myelin: error: %s\n", memory.message.c_str());
            return finish(kExitError, memory.message);
        }
        if (memory.fit == train::MemoryFit::Close)
            std::fprintf(stderr, "myelin: warning: %s\n", memory.message.c_str());
    } catch (const Error& e) {
        std::fprintf(stderr, "myelin: error: %s\n", e.what());
        return finish(kExitError, e.what());
    }
    if (!json) std::printf("\nOK\n");
    return finish(kExitOk);
}

int cmd_format(const Args& args) {
    int status = kExitOk;
    for (const auto& path : args.positional()) {
        try {
            io::save_project(io::load_project(path), path);
        } catch (const Error& e) {
            std::fprintf(stderr, "myelin: error: %s\n", e.what());
            status = kExitError;
        }
    }
    return status;
}

int cmd_plugins(const Args&) {
    std::printf("Plugin folders, in search order:\n");
    for (const auto& folder : plugin::plugin_search_path())
        std::printf("  %s%s\n", folder.c_str(),
                    std::filesystem::is_directory(folder) ? "" : "  (does not exist)");
    const plugin::LoadReport report = plugin::plugin_report();
    std::printf("\n%zu plugin(s) loaded\n", report.loaded.size());
    for (const auto& p : report.loaded) {
        std::printf("\n%s %s  %s\n", p.name.c_str(), p.version.c_str(), p.path.c_str());
        if (!p.description.empty()) std::printf("  %s\n", p.description.c_str());
        for (const auto& kind : p.kinds)
            std::printf("  %s\n", kind.c_str());
    }
    if (report.problems.empty()) return kExitOk;
    std::printf("\n%zu plugin(s) refused\n", report.problems.size());
    for (const auto& p : report.problems)
        std::printf("  %s\n", p.message.c_str());
    return kExitError;
}

} // namespace myelin::cli

int main(int argc, char** argv) {
    try {
        return myelin::cli::run_cli(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "myelin: error: %s\n", e.what());
        return myelin::cli::kExitError;
    }
}
