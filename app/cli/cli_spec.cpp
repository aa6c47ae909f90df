// The one description of the `myelin` command line (cli_spec.h). Adding an option here adds it
// to the parser, the command's --help, the man page and the completion at once.
#include "cli_spec.h"

namespace myelin::cli {

namespace {

const char* const kExitCodes =
    "Exit codes:\n"
    "0\tsuccess\n"
    "1\tthe project is invalid, the run failed, or a file could not be read or written\n"
    "2\tbad command line\n"
    "3\ttraining was stopped before the end (Ctrl-C, --max-steps or a --break-on breakpoint)";

const char* const kCtrlC = "Ctrl-C during training stops after the current step and writes a "
                           "checkpoint; a second Ctrl-C quits at once.";

const char* const kStore = "run store (default: ~/.local/share/myelin/runs.sqlite)";

const char* const kJson =
    "print one JSON document on stdout and nothing else there (messages go to stderr); the "
    "README's \"JSON output\" lists its keys";

// A value option: `names` as "-o,--output", `metavar` what the value is (cli_spec.h).
CLI::Option* value(CLI::App* command, const std::string& names, const std::string& metavar,
                   const std::string& help) {
    return command->add_option(names)->type_name(metavar)->description(help);
}

CLI::Option* flag(CLI::App* command, const std::string& names, const std::string& help) {
    return command->add_flag(names, help);
}

// A positional argument; `many`: one or more.
CLI::Option* argument(CLI::App* command, const std::string& name, const std::string& help,
                      bool required = true, bool many = false) {
    CLI::Option* o = command->add_option(name)->type_name("")->description(help);
    if (many) o->expected(1, CLI::detail::expected_max_vector_size)->allow_extra_args();
    if (required) o->required();
    return o;
}

struct Describer {
    CommandLine& line;

    CLI::App* command(CLI::App* parent, const std::string& name, const std::string& description,
                      Handler handler, const std::string& footer = kExitCodes) {
        CLI::App* c = parent->add_subcommand(name, description);
        c->footer(footer);
        if (handler) line.handlers[c] = handler;
        return c;
    }

    void check(CLI::App* root) {
        CLI::App* c = command(
            root, "check",
            "validate a project and print its model summary and the memory training needs\n"
            "Per layer: kind, output shape, parameters and FLOPs; then the memory training "
            "needs at the batch size on the device against what is free there. Exits 1 when "
            "the project is invalid or the run cannot fit.",
            cmd_check);
        argument(c, "PROJECT", "the project file (*.myelin)");
        value(c, "--batch-size", "N",
              "the batch size of the memory estimate (default: the project's)");
        value(c, "--device", "cpu|cuda[:N]",
              "the device whose free memory is compared (default: the project's "
              "training.device)");
        flag(c, "--json", kJson);
    }

    void format(CLI::App* root) {
        CLI::App* c =
            command(root, "format", "rewrite project files in canonical form", cmd_format);
        argument(c, "PROJECT", "the project files (*.myelin)", true, true);
    }

    void train(CLI::App* root) {
        CLI::App* c = command(root, "train",
                              "train the project's model; the run goes to the store\n"
                              "Progress is a redrawn line on a terminal, plain lines otherwise.",
                              cmd_train, std::string(kCtrlC) + "\n\n" + kExitCodes);
        argument(c, "PROJECT", "the project file (*.myelin)");
        value(c, "--epochs", "N", "override the project's epochs");
        value(c, "--seed", "S", "override the project's seed");
        value(c, "--threads", "N", "compute threads (default: the project's, else all)");
        flag(c, "--flush-denormal",
             "denormal floats flushed to zero while training (the project's "
             "training.flush_denormal; as PyTorch's torch.set_flush_denormal(True)): faster "
             "once Adam's moments decay into denormals, no longer IEEE-exact");
        value(c, "--device", "cpu|cuda[:N]",
              "where to train (default: the project's training.device, else cpu); a device "
              "that cannot be used is refused before the run starts (exit 1)");
        flag(c, "--ignore-memory-check",
             "train even when the memory estimate says the run cannot fit (it is refused "
             "before anything starts)");
        value(c, "--store", "FILE", kStore);
        value(c, "--name", "NAME", "run name (default: the project's name)");
        value(c, "--resume", "RUN|CHECKPOINT",
              "continue a run (its latest checkpoint) or a checkpoint as a new run (the "
              "optimizer goes on as it was)");
        value(c, "--fork", "RUN[@STEP]",
              "a new run branching off RUN at its checkpoint of STEP (default: its latest) "
              "with this project and options; what they change is recorded (runs show: "
              "fork.diff.*)");
        value(c, "--lr", "X",
              "override the optimizer's learning rate (a fork's from the branch point on; a "
              "schedule goes on scaled)");
        value(c, "--checkpoint-dir", "DIR",
              "where checkpoints go (default: the store's run folder)");
        value(c, "--max-steps", "N", "stop after N optimizer steps (with a checkpoint)");
        value(c, "--break-on", "CONDITIONS",
              "stop at the step where one holds, before applying it, with a checkpoint (exit "
              "3): nonfinite, grad-spike=K (a layer's gradient norm > K x its recent median), "
              "dead=F (an activation layer's output > F zeros), loss-above=V[@STEP]");
        value(c, "--init-weights", "FILE",
              "start from these weights (safetensors state_dict, e.g. from PyTorch; combine "
              "with frozen layers to fine-tune)");
        value(c, "--dist", "auto|mpi|none",
              "data-parallel over MPI: auto (default) when started by mpirun or srun, one rank "
              "per process, each training on its shard with the project's batch (global batch "
              "= batch x ranks); rank 0 writes the store and checkpoints");
        value(c, "--bucket-mb", "M", "gradients averaged in buckets of M MB (default 25)");
        value(c, "--dist-check", "N", "compare every parameter across ranks every N steps");
        value(c, "--dist-timeout", "S",
              "a rank waiting more than S s for the others fails the job (default 300)");
        flag(c, "--dist-no-overlap", "average gradients after backward, not during it");
        flag(c, "--sync-batchnorm", "BatchNorm statistics over every rank's examples");
        value(c, "--events", "jsonl",
              "each event as one JSON line on stdout (rank 0), for a program that launched "
              "this one (the studio)");
        value(c, "--stop-file", "FILE", "stop after the step at which FILE exists (as Ctrl-C)");
        value(c, "--data-dir", "DIR", "resolve the project's data paths in DIR");
        value(c, "--record-project", "FILE", "the project file recorded with the run");
    }

    void lr_find(CLI::App* root) {
        CLI::App* c = command(
            root, "lr-find",
            "learning-rate range test: the curve and the suggested learning rate\n"
            "Up to --steps steps on a fresh copy of the model with the learning rate growing "
            "from --start-lr to --end-lr, stopped when the loss diverges; prints the curve and "
            "the suggested learning rate (steepest descent, and a tenth of the minimum). The "
            "project is not changed; the test is recorded as a run tagged lr-find (runs list "
            "--all).",
            cmd_lr_find);
        argument(c, "PROJECT", "the project file (*.myelin)");
        value(c, "--steps", "N", "at most N steps (default 100)");
        value(c, "--start-lr", "X", "the first learning rate (default 1e-7)");
        value(c, "--end-lr", "Y", "the last learning rate (default 10)");
        value(c, "--seed", "S", "override the project's seed");
        value(c, "--store", "FILE", kStore);
    }

    void eval(CLI::App* root) {
        CLI::App* c = command(
            root, "eval",
            "evaluate a checkpoint on the project's test data\n"
            "The test part of the data, else the validation part. For classification also the "
            "confusion matrix and per-class precision, recall and F1. Without PROJECT: the "
            "project the checkpoint carries.",
            cmd_eval);
        argument(c, "PROJECT", "the project file (*.myelin)", false);
        value(c, "--checkpoint", "FILE", "the checkpoint to evaluate (.safetensors)")->required();
        value(c, "--predictions", "CSV", "also write every example's target and outputs");
        value(c, "--top-loss", "K", "also list the K examples of highest loss");
        value(c, "--threads", "N", "compute threads (default: the project's, else all)");
        flag(c, "--json", kJson);
    }

    void quantize(CLI::App* root) {
        CLI::App* c = command(
            root, "quantize",
            "make an int8 model of a float checkpoint\n"
            "Static (default): Linear and Conv2d layers get per-channel int8 weights and int8 "
            "activations whose ranges an observer measures on the training split's first "
            "batches; a ReLU after one is fused. --dynamic: Linear layers get per-tensor int8 "
            "weights and each batch's activations are quantized on the fly. Other layers stay "
            "float32 (the output says which and why). The result is a checkpoint that eval and "
            "export --format onnx read. Without PROJECT: the project the checkpoint carries.",
            cmd_quantize);
        argument(c, "PROJECT", "the project file (*.myelin)", false);
        value(c, "--checkpoint", "FILE", "the float checkpoint (.safetensors)")->required();
        value(c, "-o,--output", "OUT", "the int8 checkpoint to write (.safetensors)")->required();
        value(c, "--calibration-batches", "N", "static: calibrate on N batches (default 32)");
        value(c, "--observer", "histogram|minmax|moving-average",
              "static: how activation ranges are measured (default histogram, PyTorch's "
              "HistogramObserver)");
        flag(c, "--dynamic", "dynamic quantization (quantize_dynamic) instead of static");
        value(c, "--qat-epochs", "N",
              "static: N epochs of quantization-aware training (fake quantization, "
              "moving-average observers) from the checkpoint before the conversion");
        value(c, "--qat-lr", "X", "the learning rate of those epochs (default: the project's)");
        value(c, "--threads", "N", "compute threads (default: the project's, else all)");
    }

    void export_(CLI::App* root) {
        CLI::App* c = command(
            root, "export",
            "write a checkpoint's model as ONNX, PyTorch code or safetensors\n"
            "ONNX opset 17 (checked), PyTorch code (.py with a checkpoint loader) or weights "
            "with their project, classes and preprocessing; nothing is written when the export "
            "fails. Without PROJECT: the project the checkpoint carries.",
            cmd_export);
        argument(c, "PROJECT", "the project file (*.myelin)", false);
        value(c, "--checkpoint", "FILE", "the checkpoint to export (.safetensors)")->required();
        value(c, "--format", "onnx|pytorch|safetensors", "what to write")->required();
        value(c, "-o,--output", "OUT", "the file to write")->required();
    }

    void import(CLI::App* root) {
        CLI::App* c =
            command(root, "import",
                    "build a project of Myelin layers from an ONNX model\n"
                    "Opset 13-17 (e.g. from torch.onnx.export); its weights are written for "
                    "--init-weights. Nothing is written when a node has no Myelin layer.",
                    cmd_import);
        argument(c, "MODEL.onnx", "the ONNX model");
        value(c, "-o,--output", "PROJECT", "the project file to write (*.myelin)")->required();
        value(c, "--checkpoint", "FILE",
              "where its weights go (default: PROJECT with .safetensors)");
    }

    void runs(CLI::App* root) {
        CLI::App* runs =
            command(root, "runs", "the run store: list, show, inspect, export, delete", nullptr);
        runs->require_subcommand(1);
        // `myelin runs --store FILE list` as before: accepted, documented with each action.
        value(runs, "--store", "FILE", kStore)->group("");
        CLI::App* c =
            command(runs, "list",
                    "list the runs with their parent and latest metrics\n"
                    "The parent is #RUN@STEP: resumed or forked from that run's checkpoint of that "
                    "step.",
                    cmd_runs_list);
        value(c, "--store", "FILE", kStore);
        flag(c, "--all", "also list learning-rate range tests");
        flag(c, "--json", kJson);
        // The completion's run ids: one a line, nothing else.
        flag(c, "--ids-only", "")->group("");
        c = command(runs, "show", "a run's details, parameters, metrics and checkpoints",
                    cmd_runs_show);
        argument(c, "RUN", "the run's id");
        value(c, "--store", "FILE", kStore);
        flag(c, "--json", kJson);
        c = command(runs, "layers",
                    "per-layer gradient and weight norms, update ratio and activations at a step\n"
                    "Also activation mean and std, zeros and non-finite counts, at the nearest "
                    "recorded step (the newest without --step).",
                    cmd_runs_layers);
        argument(c, "RUN", "the run's id");
        value(c, "--step", "N", "the step (default: the newest)");
        value(c, "--store", "FILE", kStore);
        flag(c, "--json", kJson);
        c = command(runs, "export-csv", "write a run's metrics as CSV", cmd_runs_export_csv);
        argument(c, "RUN", "the run's id");
        argument(c, "FILE", "the CSV file to write");
        flag(c, "--wide", "one column per metric (default: step, key, value rows)");
        value(c, "--store", "FILE", kStore);
        c = command(runs, "delete", "delete a run and its files", cmd_runs_delete);
        argument(c, "RUN", "the run's id");
        value(c, "--store", "FILE", kStore);
    }

    void plugins(CLI::App* root) {
        command(root, "plugins",
                "list the plugins loaded, their kinds, and the ones refused\n"
                "Exits 1 when one was refused.",
                cmd_plugins);
    }
};

} // namespace

CommandLine describe_command_line() {
    CommandLine line;
    line.app = std::make_unique<CLI::App>(
        "train, evaluate, export and inspect Myelin Studio projects without a display\n"
        "The headless tool of Myelin Studio. Each command has its own help: myelin COMMAND "
        "--help.",
        "myelin");
    CLI::App* root = line.app.get();
    root->formatter(help_formatter()); // before the commands: they inherit it
    root->set_help_flag("-h,--help", "print this help");
    // As the hand-written parser did: an option given twice takes the last value.
    root->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    // One command a line: a second command's name is an argument too many, not a second run.
    root->require_subcommand(0, 1);
    root->footer(
        "Environment:\n"
        "MYELIN_PLUGIN_PATH\t':'-separated folders plugins load from (shared libraries adding "
        "layers, losses, optimizers, schedules, data sources and transforms), before "
        "~/.local/share/myelin/plugins and the install's lib/myelin/plugins\n"
        "\n" +
        std::string(kCtrlC) + "\n\n" + kExitCodes);
    flag(root, "--version", "print the version and the compute backends found");
    // Run at build time to write the man page and the completion (packaging/CMakeLists.txt).
    flag(root, "--generate-man", "")->group("");
    flag(root, "--generate-bash-completion", "")->group("");
    Describer d{line};
    d.check(root);
    d.format(root);
    d.train(root);
    d.lr_find(root);
    d.eval(root);
    d.quantize(root);
    d.export_(root);
    d.import(root);
    d.runs(root);
    d.plugins(root);
    return line;
}

} // namespace myelin::cli
