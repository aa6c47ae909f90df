// myelin train / myelin eval: a project trained from the terminal, recorded in the run store,
// with a progress line on a terminal and plain lines otherwise; Ctrl-C stops cleanly.
#include <myelin/cuda.h>
#include <myelin/device.h>
#include <myelin/error.h>
#include <myelin/io/project.h>
#include <myelin/spec/components.h>
#include <myelin/store/run_store.h>
#include <myelin/train/class_weights.h>
#include <myelin/train/evaluation.h>
#include <myelin/train/event_lines.h>
#include <myelin/train/memory_estimate.h>
#include <myelin/train/recorded_run.h>
#include <myelin/train/trainer.h>

#include "cli_common.h"
#include "cli_dist.h"
#include "cli_json.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <tuple>

namespace myelin::cli {

namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_sigint(int) {
    g_interrupted = true;
    std::signal(SIGINT, SIG_DFL); // a second Ctrl-C quits at once
}

std::string duration_text(double seconds) {
    if (seconds < 0) return "?";
    long s = long(seconds + 0.5);
    char buffer[32];
    if (s >= 3600)
        std::snprintf(buffer, sizeof buffer, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else
        std::snprintf(buffer, sizeof buffer, "%ld:%02ld", s / 60, s % 60);
    return buffer;
}

// All metrics, or (compact) the headline ones; the store has every metric either way.
std::string metrics_text(const train::MetricMap& m, const char* prefix, bool compact = false) {
    std::string out;
    for (const auto& [k, v] : m) {
        const auto description = spec::describe_metric(k);
        if (compact && !(description && description->headline)) continue;
        char buffer[96];
        std::snprintf(buffer, sizeof buffer, " %s%s=%.4f", prefix, k.c_str(), v);
        out += buffer;
    }
    return out;
}

// Prints progress: a redrawn line on a terminal (at most ~10 times a second), plain lines every
// tenth of an epoch otherwise; epochs, checkpoints, logs and errors as lines. Also turns Ctrl-C
// into a clean stop (it runs on the training thread, where stop() is safe).
class ProgressPrinter final : public train::EventSink {
  public:
    ProgressPrinter(train::Trainer& trainer, bool terminal)
        : trainer_(trainer), terminal_(terminal) {}

    void on_event(const train::Event& e) override {
        if (g_interrupted && !stop_requested_) {
            stop_requested_ = true;
            end_line();
            std::fprintf(stderr, "myelin: stopping after this step (Ctrl-C again to quit now)\n");
            trainer_.stop();
        }
        if (auto* m = e.get<train::StepMetrics>()) last_loss_ = m->loss;
        if (auto* p = e.get<train::Progress>()) return progress(*p);
        if (auto* m = e.get<train::EpochMetrics>()) {
            end_line();
            std::printf("epoch %lld/%lld step %lld:%s%s\n", (long long)m->epoch + 1,
                        (long long)trainer_.spec().epochs, (long long)m->step,
                        metrics_text(m->train, "train_", true).c_str(),
                        metrics_text(m->validation, "val_", true).c_str());
        } else if (auto* c = e.get<train::CheckpointSaved>()) {
            end_line();
            std::printf("checkpoint%s: %s\n", c->is_best ? " (best)" : "", c->path.c_str());
        } else if (auto* l = e.get<train::LogMessage>()) {
            end_line();
            std::printf("%s%s\n", l->level == train::LogLevel::Warning ? "warning: " : "",
                        l->text.c_str());
        } else if (auto* b = e.get<train::BreakpointFired>()) {
            end_line();
            std::printf("breakpoint %s at step %lld%s: %s\n", b->condition.c_str(),
                        (long long)b->step, b->layer ? (" in " + *b->layer).c_str() : "",
                        b->message.c_str());
        } else if (auto* change = e.get<train::RunChanged>()) {
            end_line();
            std::printf("changed after step %lld: %s\n", (long long)change->step,
                        change->what.c_str());
        } else if (auto* err = e.get<train::RunError>()) {
            end_line();
            std::fprintf(stderr, "myelin: training %s: %s\n", err->stopped ? "stopped" : "failed",
                         err->message.c_str());
        }
        std::fflush(stdout);
    }

    void end_line() {
        if (line_open_) std::printf("\n");
        line_open_ = false;
    }

  private:
    void progress(const train::Progress& p) {
        auto now = std::chrono::steady_clock::now();
        bool epoch_end = p.step_in_epoch == p.steps_per_epoch;
        if (terminal_) {
            if (!epoch_end && now - last_print_ < std::chrono::milliseconds(100)) return;
            last_print_ = now;
            const int width = 24;
            int filled = p.steps_per_epoch ? int(width * p.step_in_epoch / p.steps_per_epoch) : 0;
            std::string bar(size_t(filled), '#');
            bar.resize(width, '.');
            std::printf("\repoch %lld/%lld [%s] %lld/%lld loss %.4f %.0f samples/s ETA %s   ",
                        (long long)p.epoch + 1, (long long)p.epochs, bar.c_str(),
                        (long long)p.step_in_epoch, (long long)p.steps_per_epoch, last_loss_,
                        p.samples_per_second, duration_text(p.eta_seconds).c_str());
            line_open_ = true;
            std::fflush(stdout);
            return;
        }
        int64_t every = std::max<int64_t>(1, p.steps_per_epoch / 10);
        if (p.step_in_epoch % every != 0 && !epoch_end) return;
        std::printf("epoch %lld/%lld step %lld/%lld loss %.4f %.0f samples/s ETA %s\n",
                    (long long)p.epoch + 1, (long long)p.epochs, (long long)p.step_in_epoch,
                    (long long)p.steps_per_epoch, last_loss_, p.samples_per_second,
                    duration_text(p.eta_seconds).c_str());
    }

    train::Trainer& trainer_;
    bool terminal_;
    bool line_open_ = false;
    bool stop_requested_ = false;
    double last_loss_ = 0;
    std::chrono::steady_clock::time_point last_print_{};
};

// --events jsonl: every event the line format carries as one JSON line on stdout, for a program
// that launched this one (the studio's multi-process runs); also turns Ctrl-C into a clean stop
// as the progress printer does.
class EventLineWriter final : public train::EventSink {
  public:
    explicit EventLineWriter(train::Trainer& trainer) : trainer_(trainer) {}
    void on_event(const train::Event& e) override {
        if (g_interrupted && !stop_requested_) {
            stop_requested_ = true;
            trainer_.stop();
        }
        const std::string line = train::event_line(e);
        if (line.empty()) return;
        std::fwrite(line.data(), 1, line.size(), stdout);
        std::fputc('\n', stdout);
        std::fflush(stdout);
    }

  private:
    train::Trainer& trainer_;
    bool stop_requested_ = false;
};

// --stop-file PATH: once the file exists the run stops after the current step (checked at most
// ten times a second, at step boundaries), exactly as for Ctrl-C; in a data-parallel run rank 0
// checks it and every rank stops at the same step.
class StopFileWatcher final : public train::EventSink {
  public:
    StopFileWatcher(train::Trainer& trainer, std::filesystem::path path)
        : trainer_(trainer), path_(std::move(path)) {}
    void on_event(const train::Event& e) override {
        if (stop_requested_ || (!e.get<train::StepMetrics>() && !e.get<train::Progress>())) return;
        const auto now = std::chrono::steady_clock::now();
        if (now - last_check_ < std::chrono::milliseconds(100)) return;
        last_check_ = now;
        std::error_code ec;
        if (!std::filesystem::exists(path_, ec)) return;
        stop_requested_ = true;
        trainer_.stop();
    }

  private:
    train::Trainer& trainer_;
    std::filesystem::path path_;
    bool stop_requested_ = false;
    std::chrono::steady_clock::time_point last_check_{};
};

void print_event_line(const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
}

} // namespace

namespace {
int train_process(const Args& args, train::TrainerOptions& options,
                  const std::shared_ptr<dist::Communicator>& comm);
}

int cmd_train(const Args& args) {
    train::TrainerOptions options;
    options.epochs = args.get_int("--epochs", 1);
    if (auto s = args.get_int("--seed", 0)) options.seed = uint64_t(*s);
    options.threads = int(args.get_int("--threads", 1).value_or(0));
    options.flush_denormal = args.flag("--flush-denormal");
    options.max_steps = args.get_int("--max-steps", 1).value_or(0);
    options.init_weights = args.get("--init-weights").value_or("");
    if (auto lr = args.get("--lr")) {
        char* end = nullptr;
        const double value = std::strtod(lr->c_str(), &end);
        if (lr->empty() || *end != '\0' || !std::isfinite(value) || value < 0)
            throw UsageError{"--lr needs a number >= 0, got '" + *lr + "'"};
        options.lr = value;
    }
    std::optional<train::ForkSource> fork;
    if (auto source = args.get("--fork")) {
        try {
            fork = train::parse_fork_source(*source);
        } catch (const Error& e) {
            throw UsageError{e.what()};
        }
    }
    if (auto format = args.get("--events"); format && *format != "jsonl")
        throw UsageError{"--events: the one format is 'jsonl', got '" + *format + "'"};
    if (fork && args.get("--resume")) throw UsageError{"--fork and --resume exclude each other"};
    if (options.lr && args.get("--resume"))
        throw UsageError{"--lr with --resume: a resume goes on with the checkpoint's learning "
                         "rate; fork the run to change it (--fork RUN[@STEP] --lr X)"};
    if (auto conditions = args.get("--break-on")) {
        try {
            options.breakpoints =
                std::make_shared<train::BreakpointSet>(train::parse_break_conditions(*conditions));
        } catch (const Error& e) {
            throw UsageError{std::string("--break-on: ") + e.what()};
        }
        options.on_break = train::BreakAction::Stop; // no one to resume a paused run
    }
    // Data-parallel (cli_dist.h): under an MPI launcher every rank runs this; a failure on any
    // rank ends the job (rank 0 marks the run failed first).
    std::shared_ptr<dist::Communicator> comm;
    try {
        comm = start_distributed(args, options);
    } catch (const Error& e) {
        std::fprintf(stderr, "myelin: error: %s\n", e.what());
        return kExitError;
    }
    if (!comm) return train_process(args, options, comm);
    int code = kExitError;
    try {
        code = train_process(args, options, comm);
    } catch (const std::exception& e) {
        fail_rank(*comm, e.what());
    } catch (const UsageError& e) {
        fail_rank(*comm, e.message);
    }
    if (code == kExitError) { // already reported (and recorded on rank 0)
        std::fflush(stdout);
        comm->abort(kExitError);
    }
    return code;
}

namespace {

int train_process(const Args& args, train::TrainerOptions& options,
                  const std::shared_ptr<dist::Communicator>& comm) {
    const std::filesystem::path project_path = args.positional()[0];
    std::optional<train::ForkSource> fork; // checked by cmd_train
    if (auto source = args.get("--fork")) fork = train::parse_fork_source(*source);
    std::optional<Device> requested; // --device overrides the project's training.device
    if (auto text = args.get("--device")) {
        try {
            requested = parse_device(*text);
        } catch (const Error& e) {
            throw UsageError{std::string("--device: ") + e.what()};
        }
    }
    io::Project project;
    try {
        project = io::load_project(project_path);
        // A run on a device it cannot use is refused before anything is created.
        options.device = train::training_device(project, requested);
    } catch (const Error& e) {
        std::fprintf(stderr, "myelin: error: %s\n", e.what());
        return kExitError;
    }
    options.project_dir = project_path.parent_path().empty() ? "." : project_path.parent_path();
    // A copy of a project trained elsewhere (the studio's multi-process runs): its data paths
    // resolve in the original's folder, and the original is the file recorded with the run.
    if (auto dir = args.get("--data-dir")) options.project_dir = *dir;
    // The memory pre-flight: a run that cannot fit is refused before anything is allocated or
    // recorded (it would be killed minutes later by the system), one that is close is warned.
    if (!args.flag("--ignore-memory-check")) {
        try {
            const train::MemoryVerdict memory = train::check_training_memory(
                project, options.project_dir, project.data.batch_size, options.device);
            if (memory.fit == train::MemoryFit::DoesNotFit) {
                std::fprintf(stderr, "myelin: error: %s\n(--ignore-memory-check trains anyway)\n",
                             memory.message.c_str());
                return kExitError;
            }
            if (memory.fit == train::MemoryFit::Close)
                std::fprintf(stderr, "myelin: warning: %s\n", memory.message.c_str());
        } catch (const Error&) {
            // An invalid model or data: the run's own setup says what is wrong, recorded.
        }
    }
    options.run_name = args.get("--name").value_or(
        project.name.empty() ? project_path.stem().string() : project.name);
    split_cores_between_ranks(project, options);
    if (comm && comm->rank() != 0) return train_other_rank(project, options);

    train::RecordedRunOptions recorded;
    recorded.store_path = args.get("--store").value_or(store::default_store_path().string());
    recorded.resume = args.get("--resume").value_or("");
    recorded.fork = fork;
    recorded.checkpoint_dir = args.get("--checkpoint-dir").value_or("");
    recorded.project_path = args.get("--record-project").value_or(project_path.string());
    const bool event_lines = args.get("--events").has_value();
    // The run exists in the store before anything can fail, so a failed setup is recorded too.
    train::RecordedRun run(project, options, recorded);
    const int64_t run_id = run.id();
    if (event_lines) print_event_line(train::run_created_line({run_id, recorded.store_path}));
    train::Trainer* trainer = nullptr;
    try {
        trainer = &run.prepare();
    } catch (const Error& e) {
        std::fprintf(stderr, "myelin: error: %s\n", e.what());
        if (event_lines) {
            print_event_line(train::event_line(train::RunError{e.what(), 0, 0, std::nullopt}));
            print_event_line(train::event_line(train::Finished{train::RunStatus::Failed, 0, 0}));
        }
        return kExitError;
    }
    std::printf("run %lld \"%s\" in %s\n", (long long)run_id, options.run_name.c_str(),
                recorded.store_path.c_str());
    if (const auto& point = run.fork_point()) {
        std::printf("fork of run %lld at step %lld (%s)\n", (long long)point->run,
                    (long long)point->step, point->checkpoint.c_str());
        if (run.fork_changes().empty()) std::printf("  no changes\n");
        for (const auto& c : run.fork_changes())
            std::printf("  %s: %s -> %s\n", c.path.c_str(), c.before.c_str(), c.after.c_str());
    }
    std::printf("model: %lld parameters; data: %lld training, %lld validation, %lld test "
                "examples; %lld steps per epoch\n",
                (long long)trainer->model().num_parameters(),
                (long long)trainer->data().train->size(),
                (long long)(trainer->data().validation ? trainer->data().validation->size() : 0),
                (long long)(trainer->data().test ? trainer->data().test->size() : 0),
                (long long)trainer->steps_per_epoch());
    if (const auto& text = trainer->data().text_encoder)
        std::printf("text: %s tokens, vocabulary of %lld, %lld per example\n",
                    data::to_string(text->encoding().level), (long long)text->vocabulary_size(),
                    (long long)text->max_length());
    for (const std::string& note : trainer->data().notes)
        std::printf("data: %s\n", note.c_str());
    for (const std::string& line :
         train::describe_loss_weights(trainer->spec().loss, trainer->loss_context()))
        std::printf("loss %s %s\n", trainer->spec().loss.kind.c_str(), line.c_str());

    ProgressPrinter printer(*trainer, ::isatty(STDOUT_FILENO) == 1);
    EventLineWriter line_writer(*trainer);
    train::FanOut sinks;
    if (event_lines)
        sinks.add(line_writer);
    else
        sinks.add(printer);
    std::optional<StopFileWatcher> stop_file;
    if (auto path = args.get("--stop-file")) sinks.add(stop_file.emplace(*trainer, *path));
    g_interrupted = false;
    auto previous = std::signal(SIGINT, on_sigint);
    train::TrainResult result;
    try {
        result = run.run(&sinks);
    } catch (const std::exception& e) { // the store failed
        std::signal(SIGINT, previous);
        printer.end_line();
        run.fail(e.what());
        throw;
    }
    std::signal(SIGINT, previous);
    printer.end_line();
    if (result.train_seconds > 0)
        std::printf("training loop: %lld examples in %.3f s (%.0f examples/s)\n",
                    (long long)result.train_samples, result.train_seconds,
                    double(result.train_samples) / result.train_seconds);
    switch (result.status) {
    case train::RunStatus::Finished:
        std::printf("finished run %lld after %lld steps\n", (long long)run_id,
                    (long long)result.steps);
        return kExitOk;
    case train::RunStatus::Stopped:
        std::printf("stopped run %lld at step %lld%s%s\n", (long long)run_id,
                    (long long)result.steps,
                    result.last_checkpoint.empty() ? "" : "; resume with --resume ",
                    result.last_checkpoint.empty() ? "" : std::to_string(run_id).c_str());
        return kExitStopped;
    case train::RunStatus::Failed:
        break;
    }
    return kExitError;
}

} // namespace

namespace {

// The model's outputs per example as CSV: the target (one column per target value when an
// example has several), then output0..outputD-1.
void write_predictions(const train::Evaluation& e, const std::string& csv) {
    std::FILE* f = std::fopen(csv.c_str(), "w");
    if (!f) throw Error("cannot write " + csv);
    const int64_t cols = e.outputs_per_example;
    const int64_t target_cols = e.classification() ? 1 : cols;
    if (target_cols == 1) std::fprintf(f, "target");
    for (int64_t c = 0; target_cols > 1 && c < target_cols; ++c)
        std::fprintf(f, "%starget%lld", c ? "," : "", (long long)c);
    for (int64_t c = 0; c < cols; ++c)
        std::fprintf(f, ",output%lld", (long long)c);
    std::fprintf(f, "\n");
    for (int64_t i = 0; i < e.size; ++i) {
        for (int64_t c = 0; c < target_cols; ++c)
            std::fprintf(f, "%s%.9g", c ? "," : "",
                         e.classification() ? double(e.targets[size_t(i)])
                                            : double(e.target_value(i, c)));
        for (int64_t c = 0; c < cols; ++c)
            std::fprintf(f, ",%.9g", double(e.output(i, c)));
        std::fprintf(f, "\n");
    }
    if (std::fclose(f) != 0) throw Error("writing " + csv + " failed");
}

// The examples of highest loss: index, loss, and the true and predicted class with the
// predicted probability (classification) or the target and output (regression).
void print_top_losses(const train::Evaluation& e) {
    std::printf("top %zu losses (example: loss):\n", e.top_losses.size());
    const auto name = [&](int64_t c) {
        return c < int64_t(e.class_names.size()) ? e.class_names[size_t(c)] : std::to_string(c);
    };
    for (int64_t i : e.top_losses) {
        std::printf("  %6lld: %8.4f", (long long)i, e.losses[size_t(i)]);
        if (e.classification()) {
            const int64_t t = e.targets[size_t(i)], p = e.predicted[size_t(i)];
            std::printf("  true %s, predicted %s (p=%.3f, true p=%.3f)\n", name(t).c_str(),
                        name(p).c_str(), double(e.probability(i, p)), double(e.probability(i, t)));
        } else {
            std::printf("  target %.6g, output %.6g\n", double(e.target_value(i, 0)),
                        double(e.output(i, 0)));
        }
    }
}

// eval --json: the document the README's "JSON output" describes.
nlohmann::ordered_json evaluation_json(const train::Evaluation& e,
                                       const std::optional<std::string>& csv) {
    nlohmann::ordered_json doc = {{"split", e.split}, {"examples", e.size}};
    doc["metrics"] = nlohmann::ordered_json::object();
    for (const auto& [k, v] : e.metrics)
        doc["metrics"][k] = v;
    doc["predictions"] = csv ? nlohmann::ordered_json(*csv) : nlohmann::ordered_json(nullptr);
    const train::ConfusionMatrix& confusion = e.confusion;
    const auto name = [&](int64_t c) {
        return c < int64_t(confusion.class_names.size()) ? confusion.class_names[size_t(c)]
                                                         : std::to_string(c);
    };
    doc["confusion"] = nullptr;
    if (confusion.num_classes > 0) {
        nlohmann::ordered_json classes = nlohmann::ordered_json::array(),
                               matrix = nlohmann::ordered_json::array(),
                               per_class = nlohmann::ordered_json::array();
        for (int64_t r = 0; r < confusion.num_classes; ++r) {
            classes.push_back(name(r));
            nlohmann::ordered_json row = nlohmann::ordered_json::array();
            for (int64_t c = 0; c < confusion.num_classes; ++c)
                row.push_back(confusion.at(r, c));
            matrix.push_back(row);
            const train::ClassScores s = train::class_scores(confusion, r);
            per_class.push_back({{"class", name(r)},
                                 {"precision", s.precision},
                                 {"recall", s.recall},
                                 {"f1", s.f1},
                                 {"support", s.support}});
        }
        doc["confusion"] = {{"classes", classes}, {"matrix", matrix}, {"per_class", per_class}};
    }
    nlohmann::ordered_json top = nlohmann::ordered_json::array();
    for (int64_t i : e.top_losses) {
        nlohmann::ordered_json row = {{"example", i}, {"loss", e.losses[size_t(i)]}};
        if (e.classification()) {
            const int64_t t = e.targets[size_t(i)], p = e.predicted[size_t(i)];
            row["target"] = name(t);
            row["predicted"] = name(p);
            row["probability"] = e.probability(i, p);
            row["target_probability"] = e.probability(i, t);
        } else {
            row["target"] = e.target_value(i, 0);
            row["output"] = e.output(i, 0);
        }
        top.push_back(row);
    }
    doc["top_losses"] = top;
    return doc;
}

} // namespace

int cmd_eval(const Args& args) {
    const int64_t top_loss = args.get_int("--top-loss", 1).value_or(0);
    io::Project project;
    std::filesystem::path project_dir;
    if (args.positional().empty()) { // the checkpoint's own project and data folder
        std::tie(project, project_dir) = checkpoint_project(*args.get("--checkpoint"));
    } else {
        const std::filesystem::path project_path = args.positional()[0];
        project = io::load_project(project_path);
        project_dir = project_path.parent_path().empty() ? "." : project_path.parent_path();
    }
    auto trainer = train::trainer_for_checkpoint(project, project_dir, *args.get("--checkpoint"),
                                                 int(args.get_int("--threads", 1).value_or(0)));
    std::string split;
    const data::DatasetPtr dataset = train::evaluation_dataset(*trainer, &split);
    train::EvaluationOptions options;
    options.top_losses = top_loss;
    const auto start = std::chrono::steady_clock::now();
    const train::Evaluation e = train::evaluate_examples(*trainer, dataset, options);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (args.flag("--json")) {
        if (auto csv = args.get("--predictions")) write_predictions(e, *csv);
        nlohmann::ordered_json doc = evaluation_json(e, args.get("--predictions"));
        doc["seconds"] = seconds;
        print_json(doc);
        return kExitOk;
    }
    std::printf("%s (%lld examples):%s\n", split.c_str(), (long long)e.size,
                metrics_text(e.metrics, "").c_str());
    // Loading, transforms and the forward passes: what a user waits for.
    std::printf("evaluated in %.3f s (%.0f examples/s)\n", seconds,
                seconds > 0 ? double(e.size) / seconds : 0.0);
    if (auto csv = args.get("--predictions")) {
        write_predictions(e, *csv);
        std::printf("wrote the model's outputs for %lld examples to %s\n", (long long)e.size,
                    csv->c_str());
    }
    const train::ConfusionMatrix& confusion = e.confusion;
    if (confusion.num_classes > 0) {
        // Counts under the class names (columns as wide as the names, up to 12), then the
        // per-class scores the macro averages above are the means of.
        const int64_t n = confusion.num_classes;
        std::vector<std::string> names;
        int width = 6;
        for (int64_t c = 0; c < n; ++c) {
            names.push_back(c < int64_t(confusion.class_names.size())
                                ? confusion.class_names[size_t(c)]
                                : std::to_string(c));
            width = std::max(width, int(std::min<size_t>(names.back().size(), 12)));
        }
        std::printf("confusion matrix (rows: true class, columns: predicted):\n");
        std::printf("  %-12s", "");
        for (const auto& name : names)
            std::printf(" %*.*s", width, width, name.c_str());
        std::printf("\n");
        for (int64_t r = 0; r < n; ++r) {
            std::printf("  %-12.12s", names[size_t(r)].c_str());
            for (int64_t c = 0; c < n; ++c)
                std::printf(" %*lld", width, (long long)confusion.at(r, c));
            std::printf("\n");
        }
        std::printf("per class:\n  %-12s %9s %9s %9s %9s\n", "", "precision", "recall", "f1",
                    "support");
        for (int64_t c = 0; c < n; ++c) {
            const train::ClassScores s = train::class_scores(confusion, c);
            std::printf("  %-12.12s %9.4f %9.4f %9.4f %9lld\n", names[size_t(c)].c_str(),
                        s.precision, s.recall, s.f1, (long long)s.support);
        }
    }
    if (top_loss > 0) print_top_losses(e);
    return kExitOk;
}

} // namespace myelin::cli
