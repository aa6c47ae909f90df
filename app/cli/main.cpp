// myelin: the headless command-line tool. Links only myelin_core (no Qt), so it runs on a
// cluster node without a display. Each subcommand is a thin layer over core.
#include <myelin/cuda.h>
#include <myelin/device.h>
#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/io/project.h>
#include <myelin/plugin/loader.h>
#include <myelin/train/class_weights.h>
#include <myelin/train/components.h>
#include <myelin/train/memory_estimate.h>
#include <myelin/version.h>

#include "cli_common.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>

namespace myelin::cli {

namespace {

const char* const kUsage =
    "Usage: myelin <command> [arguments]\n"
    "\n"
    "Headless tool of Myelin Studio.\n"
    "\n"
    "Commands:\n"
    "  check PROJECT [--batch-size N] [--device D]\n"
    "                                   validate a project and print its model summary (per\n"
    "                                   layer: kind, output shape, params, FLOPs) and the\n"
    "                                   memory training needs at batch size N (default: the\n"
    "                                   project's) on D (default: the project's device)\n"
    "                                   against what is free there; exit 1 when it cannot fit\n"
    "  format PROJECT...                rewrite project files in canonical form\n"
    "  train PROJECT [options]          train the project's model; the run goes to the store\n"
    "      --epochs N                   override the project's epochs\n"
    "      --seed S                     override the project's seed\n"
    "      --threads N                  compute threads (default: the project's, else all)\n"
    "      --flush-denormal             denormal floats flushed to zero while training (the\n"
    "                                   project's training.flush_denormal; as PyTorch's\n"
    "                                   torch.set_flush_denormal(True)): faster once Adam's\n"
    "                                   moments decay into denormals, no longer IEEE-exact\n"
    "      --device cpu|cuda[:N]        where to train (default: the project's training.device,\n"
    "                                   else cpu); a device that cannot be used is refused\n"
    "      --ignore-memory-check        train even when the memory estimate says the run\n"
    "                                   cannot fit (it is refused before anything starts)\n"
    "                                   before the run starts (exit 1)\n"
    "      --store FILE                 run store (default: ~/.local/share/myelin/runs.sqlite)\n"
    "      --name NAME                  run name (default: the project's name)\n"
    "      --resume RUN|CHECKPOINT      continue a run (its latest checkpoint) or a checkpoint\n"
    "                                   as a new run (the optimizer goes on as it was)\n"
    "      --fork RUN[@STEP]            a new run branching off RUN at its checkpoint of STEP\n"
    "                                   (default: its latest) with this project and options;\n"
    "                                   what they change is recorded (runs show: fork.diff.*)\n"
    "      --lr X                       override the optimizer's learning rate (a fork's from\n"
    "                                   the branch point on; a schedule goes on scaled)\n"
    "      --checkpoint-dir DIR         where checkpoints go (default: the store's run folder)\n"
    "      --max-steps N                stop after N optimizer steps (with a checkpoint)\n"
    "      --break-on CONDITIONS        stop at the step where one holds, before applying it, "
    "with\n"
    "                                   a checkpoint (exit 3): nonfinite, grad-spike=K (a layer's\n"
    "                                   gradient norm > K x its recent median), dead=F (an\n"
    "                                   activation layer's output > F zeros), loss-above=V[@STEP]\n"
    "      --init-weights FILE          start from these weights (safetensors state_dict, e.g.\n"
    "                                   from PyTorch; combine with frozen layers to fine-tune)\n"
    "      --dist auto|mpi|none         data-parallel over MPI: auto (default) when started by\n"
    "                                   mpirun or srun, one rank per process, each training on\n"
    "                                   its shard with the project's batch (global batch = batch\n"
    "                                   x ranks); rank 0 writes the store and checkpoints\n"
    "      --bucket-mb M                gradients averaged in buckets of M MB (default 25)\n"
    "      --dist-check N               compare every parameter across ranks every N steps\n"
    "      --dist-timeout S             a rank waiting more than S s for the others fails the\n"
    "                                   job (default 300)\n"
    "      --dist-no-overlap            average gradients after backward, not during it\n"
    "      --events jsonl               each event as one JSON line on stdout (rank 0), for a\n"
    "                                   program that launched this one (the studio)\n"
    "      --stop-file FILE             stop after the step at which FILE exists (as Ctrl-C)\n"
    "      --data-dir DIR               resolve the project's data paths in DIR\n"
    "      --record-project FILE        the project file recorded with the run\n"
    "      --sync-batchnorm             BatchNorm statistics over every rank's examples\n"
    "  lr-find PROJECT [options]        learning-rate range test: up to --steps N (100) steps on\n"
    "                                   a fresh copy of the model with the lr growing from\n"
    "                                   --start-lr X (1e-7) to --end-lr Y (10), stopped when the\n"
    "                                   loss diverges; prints the curve and the suggested lr\n"
    "                                   (steepest descent, and a tenth of the minimum); the\n"
    "                                   project is not changed; the test is recorded as a run\n"
    "                                   tagged lr-find (--store FILE; --seed S as train)\n"
    "  eval [PROJECT] --checkpoint FILE [--predictions CSV]\n"
    "                                   evaluate a checkpoint on the project's test data (and\n"
    "                                   write every example's target and outputs); for\n"
    "                                   classification also the confusion matrix and per-class\n"
    "                                   precision, recall and F1\n"
    "      --top-loss K                 also list the K examples of highest loss\n"
    "                                   (without PROJECT: the project the checkpoint carries)\n"
    "  export [PROJECT] --checkpoint FILE --format onnx|pytorch|safetensors -o OUT\n"
    "                                   write the checkpoint's model as ONNX (opset 17, checked),\n"
    "                                   PyTorch code (.py with a checkpoint loader) or weights\n"
    "                                   with their project, classes and preprocessing; nothing\n"
    "                                   is written when the export fails\n"
    "  import MODEL.onnx -o PROJECT [--checkpoint FILE]\n"
    "                                   build a project of Myelin layers from an ONNX model\n"
    "                                   (opset 13-17, e.g. from torch.onnx.export) and write its\n"
    "                                   weights (default: PROJECT with .safetensors) for\n"
    "                                   --init-weights; nothing is written when a node has no\n"
    "                                   Myelin layer\n"
    "  runs list [--store FILE] [--all] list runs with their parent (#RUN@STEP: resumed or\n"
    "                                   forked from that run's checkpoint of that step) and\n"
    "                                   latest metrics; --all also lists learning-rate range\n"
    "                                   tests\n"
    "  runs show RUN [--store FILE]     a run's details, parameters, metrics and checkpoints\n"
    "  runs layers RUN [--step N] [--store FILE]   per-layer gradient/weight norms, update ratio,\n"
    "                                   activation mean/std, zeros and non-finite counts at a "
    "step\n"
    "                                   (the nearest recorded one; the newest without --step)\n"
    "  runs export-csv RUN FILE [--wide] [--store FILE]   write a run's metrics as CSV\n"
    "  runs delete RUN [--store FILE]   delete a run and its files\n"
    "  plugins                          list the plugins loaded, their kinds, and the ones\n"
    "                                   refused (exit 1 when one was refused)\n"
    "\n"
    "Options:\n"
    "  --version    print the version and the compute backends found\n"
    "  -h, --help   print this help\n"
    "\n"
    "Plugins (shared libraries adding layers, losses, optimizers, schedules, data sources and\n"
    "transforms) load from $MYELIN_PLUGIN_PATH (':'-separated folders), then\n"
    "~/.local/share/myelin/plugins, then the install's lib/myelin/plugins.\n"
    "\n"
    "Ctrl-C during training stops after the current step and writes a checkpoint; a second\n"
    "Ctrl-C quits at once.\n"
    "\n"
    "Exit codes:\n"
    "  0  success\n"
    "  1  the project is invalid, the run failed, or a file could not be read or written\n"
    "  2  bad command line\n"
    "  3  training was stopped before the end (Ctrl-C, --max-steps or a --break-on breakpoint)\n";

} // namespace

Args::Args(const std::vector<std::string_view>& args, const std::set<std::string>& options,
           const std::set<std::string>& flags) {
    for (size_t i = 0; i < args.size(); ++i) {
        std::string a(args[i]);
        if (a.size() > 1 && a[0] == '-') {
            if (flags.count(a)) {
                flags_.insert(a);
            } else if (options.count(a)) {
                if (i + 1 >= args.size()) throw UsageError{a + " needs a value"};
                values_[a] = std::string(args[++i]);
            } else {
                throw UsageError{"unknown option '" + a + "'"};
            }
        } else {
            positional_.push_back(a);
        }
    }
}

std::optional<std::string> Args::get(const std::string& option) const {
    auto it = values_.find(option);
    if (it == values_.end()) return std::nullopt;
    return it->second;
}

std::optional<int64_t> Args::get_int(const std::string& option, int64_t min) const {
    auto v = get(option);
    if (!v) return std::nullopt;
    char* end = nullptr;
    long long x = std::strtoll(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || x < min)
        throw UsageError{option + " needs an integer >= " + std::to_string(min) + ", got '" + *v +
                         "'"};
    return x;
}

int cmd_check(const std::vector<std::string_view>& raw) {
    Args args(raw, {"--batch-size", "--device"});
    if (args.positional().size() != 1)
        throw UsageError{"check: which project? (myelin check PROJECT)"};
    const std::string& path = args.positional()[0];
    const std::optional<int64_t> batch_option = args.get_int("--batch-size", 1);
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
    std::printf("%s%s%s\n\n", path.c_str(), project.name.empty() ? "" : ": ", project.name.c_str());
    std::fputs(graph::format_summary(project.model, analysis).c_str(), stdout);
    if (!analysis.ok()) {
        std::fprintf(stderr, "myelin: %s is invalid (%zu error(s))\n", path.c_str(),
                     analysis.error_count());
        return kExitError;
    }
    // Class weights by name must name the data's classes: checked (reading the data) now,
    // not when training starts.
    try {
        const std::filesystem::path dir = std::filesystem::path(path).parent_path();
        const spec::LossContext context = train::loss_context_for(
            project.train, project.data, project.model, dir.empty() ? "." : dir);
        for (const std::string& line : train::describe_loss_weights(project.train.loss, context))
            std::printf("\nloss %s %s", project.train.loss.kind.c_str(), line.c_str());
        train::make_loss(project.train.loss, context);
    } catch (const Error& e) {
        std::fprintf(stderr, "myelin: error: %s\n", e.what());
        return kExitError;
    }
    // The memory pre-flight at the batch size the run would use.
    try {
        const std::filesystem::path dir = std::filesystem::path(path).parent_path();
        const Device device = requested ? *requested : parse_device(project.train.device);
        const int64_t run_batch = batch_option ? batch : project.data.batch_size;
        const train::MemoryVerdict memory =
            train::check_training_memory(project, dir.empty() ? "." : dir, run_batch, device);
        std::printf("\nmemory to train at batch size %lld on %s:\n", (long long)run_batch,
                    device.str().c_str());
        for (const std::string& line : train::describe_memory(memory.estimate))
            std::printf("%s\n", line.c_str());
        if (memory.available.bytes > 0)
            std::printf("free on %s: %s; the largest batch size that fits: %lld\n",
                        memory.available.where.c_str(),
                        train::format_bytes(memory.available.bytes).c_str(),
                        (long long)memory.largest_batch);
        if (memory.fit == train::MemoryFit::DoesNotFit) {
            std::fprintf(stderr, "myelin: error: %s\n", memory.message.c_str());
            return kExitError;
        }
        if (memory.fit == train::MemoryFit::Close)
            std::fprintf(stderr, "myelin: warning: %s\n", memory.message.c_str());
    } catch (const Error& e) {
        std::fprintf(stderr, "myelin: error: %s\n", e.what());
        return kExitError;
    }
    std::printf("\nOK\n");
    return kExitOk;
}

int cmd_format(const std::vector<std::string_view>& raw) {
    Args args(raw, {});
    if (args.positional().empty()) throw UsageError{"format: which project files?"};
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

int cmd_plugins(const std::vector<std::string_view>& raw) {
    Args args(raw, {});
    if (!args.positional().empty())
        throw UsageError{"plugins: unexpected argument '" + args.positional()[0] + "'"};
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

namespace {

int run(int argc, char** argv) {
    if (argc < 2) {
        std::fputs(kUsage, stderr);
        return kExitUsage;
    }
    const std::string_view command = argv[1];
    std::vector<std::string_view> args(argv + 2, argv + argc);
    if (command == "--version") {
        if (!args.empty()) throw UsageError{"unexpected argument '" + std::string(args[0]) + "'"};
        std::printf("myelin %s\n", version());
        std::printf("backends: %s\n", backends_summary().c_str());
        for (const std::string& line : describe_devices())
            std::printf("%s\n", line.c_str());
        return kExitOk;
    }
    if (command == "--help" || command == "-h") {
        std::fputs(kUsage, stdout);
        return kExitOk;
    }
    // Plugins first: project files may name their kinds. A refused plugin is a warning here;
    // `myelin plugins` lists it.
    const plugin::LoadReport plugins = plugin::load_plugins();
    if (command == "plugins") return cmd_plugins(args);
    for (const auto& problem : plugins.problems)
        std::fprintf(stderr, "myelin: warning: %s\n", problem.message.c_str());
    if (command == "check") return cmd_check(args);
    if (command == "format") return cmd_format(args);
    if (command == "train") return cmd_train(args);
    if (command == "eval") return cmd_eval(args);
    if (command == "runs") return cmd_runs(args);
    if (command == "export") return cmd_export(args);
    if (command == "import") return cmd_import(args);
    if (command == "lr-find") return cmd_lr_find(args);
    throw UsageError{"unknown command '" + std::string(command) + "'"};
}

} // namespace
} // namespace myelin::cli

int main(int argc, char** argv) {
    try {
        return myelin::cli::run(argc, argv);
    } catch (const myelin::cli::UsageError& e) {
        std::fprintf(stderr, "myelin: %s\nTry 'myelin --help' for the commands.\n",
                     e.message.c_str());
        return myelin::cli::kExitUsage;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "myelin: error: %s\n", e.what());
        return myelin::cli::kExitError;
    }
}
