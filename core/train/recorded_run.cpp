#include <myelin/error.h>
#include <myelin/io/checkpoint.h>
#include <myelin/train/recorded_run.h>
#include <myelin/train/store_sink.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

namespace myelin::train {

namespace {

bool all_digits(std::string_view text) {
    return !text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos;
}

std::optional<int64_t> parse_count(std::string_view text) {
    int64_t value = 0;
    if (!all_digits(text)) return std::nullopt;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// Another process may still write (and prune) the run's checkpoints: branch off a settled run.
void require_not_running(const store::Run& run, const char* what) {
    if (run.status != store::RunStatus::Running) return;
    throw Error(std::string(what) + ": run " + std::to_string(run.id) +
                " is still running (process " + std::to_string(run.pid) + " on " + run.host +
                "); wait until it has ended");
}

std::string step_list(const std::set<int64_t>& steps) {
    std::string out;
    for (int64_t s : steps)
        out += (out.empty() ? "" : ", ") + std::to_string(s);
    return out;
}

} // namespace

ForkSource parse_fork_source(std::string_view text) {
    const auto at = text.find('@');
    ForkSource source;
    auto run = parse_count(text.substr(0, at));
    std::optional<int64_t> step;
    if (at != std::string_view::npos) step = parse_count(text.substr(at + 1));
    if (!run || (at != std::string_view::npos && !step))
        throw Error("--fork: expected RUN or RUN@STEP (a run id, and the step of one of its "
                    "checkpoints), got '" +
                    std::string(text) + "'");
    source.run = *run;
    source.step = step;
    return source;
}

std::string to_string(const ForkSource& source) {
    return std::to_string(source.run) + (source.step ? "@" + std::to_string(*source.step) : "");
}

std::filesystem::path resolve_resume(const std::string& what, store::RunStore& store,
                                     std::optional<int64_t>& parent_run) {
    if (!all_digits(what)) {
        if (!std::filesystem::exists(what))
            throw Error("--resume: no checkpoint file '" + what + "' (and not a run id)");
        // A checkpoint a recorded run wrote: that run is the parent (the first that listed it,
        // should several), so the lineage holds however the resume was asked for.
        std::error_code ec;
        const auto file = std::filesystem::weakly_canonical(what, ec);
        for (const auto& summary : store.list_runs())
            for (const auto& a : store.artifacts(summary.run.id))
                if (a.kind == "checkpoint" && (!parent_run || summary.run.id < *parent_run) &&
                    std::filesystem::weakly_canonical(a.path, ec) == file)
                    parent_run = summary.run.id;
        return what;
    }
    const int64_t id = std::stoll(what);
    store::Run run = store.run(id);
    require_not_running(run, "--resume");
    parent_run = id;
    const store::Artifact* newest = nullptr;
    const auto artifacts = store.artifacts(id);
    for (const auto& a : artifacts)
        if (a.kind == "checkpoint" && std::filesystem::exists(a.path) &&
            (!newest || a.step > newest->step ||
             (a.step == newest->step && a.created_at > newest->created_at)))
            newest = &a;
    if (!newest) throw Error("--resume: run " + what + " has no checkpoint to resume from");
    return newest->path;
}

ForkPoint resolve_fork(const ForkSource& source, store::RunStore& store) {
    const std::string name = "run " + std::to_string(source.run);
    store::Run run;
    try {
        run = store.run(source.run);
    } catch (const store::StoreError& e) {
        throw Error("--fork: " + std::string(e.what()));
    }
    require_not_running(run, "--fork");
    const std::vector<CheckpointFile> checkpoints = checkpoint_files(store, source.run);
    if (checkpoints.empty()) throw Error("--fork: " + name + " has no checkpoints to fork from");
    for (const auto& c : checkpoints)
        if ((!source.step || c.artifact.step == *source.step) && c.problem.empty())
            return {source.run, c.artifact.step, c.artifact.path};
    std::set<int64_t> steps, usable;
    for (const auto& c : checkpoints) {
        steps.insert(c.artifact.step);
        if (c.problem.empty()) usable.insert(c.artifact.step);
    }
    const std::string available = usable.empty()
                                      ? "none of its checkpoint files is left as it was written"
                                      : "it has checkpoints at steps " + step_list(usable);
    if (source.step && !steps.count(*source.step))
        throw Error("--fork: " + name + " wrote no checkpoint at step " +
                    std::to_string(*source.step) + "; " + available);
    std::string gone;
    for (const auto& c : checkpoints)
        if (!source.step || c.artifact.step == *source.step)
            gone += "\n  " + c.artifact.path.string() + " (step " +
                    std::to_string(c.artifact.step) + "): " + c.problem;
    throw Error("--fork: " + name + "'s checkpoint files " +
                (source.step ? "at step " + std::to_string(*source.step) + " " : "") +
                "are gone:" + gone + (source.step ? "\n" + available : ""));
}

std::vector<CheckpointFile> checkpoint_files(const store::RunStore& store, int64_t run) {
    std::vector<CheckpointFile> files;
    for (auto& a : store.artifacts(run))
        if (a.kind == "checkpoint") files.push_back({std::move(a), {}});
    std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
        return a.artifact.step != b.artifact.step ? a.artifact.step > b.artifact.step
                                                  : a.artifact.created_at > b.artifact.created_at;
    });
    std::map<std::string, std::string> hashes; // path -> current hash ("" when gone)
    for (auto& f : files) {
        const store::Artifact& a = f.artifact;
        auto it = hashes.find(a.path.string());
        if (it == hashes.end()) {
            std::error_code ec;
            std::string hash;
            if (std::filesystem::is_regular_file(a.path, ec)) hash = store::sha256_file(a.path);
            it = hashes.emplace(a.path.string(), hash).first;
        }
        if (it->second.empty())
            f.problem = "deleted";
        else if (!a.sha256.empty() && it->second != a.sha256)
            f.problem = "overwritten since";
    }
    return files;
}

RecordedRun::RecordedRun(const io::Project& project, TrainerOptions options, RecordedRunOptions run)
    : project_(project), options_(std::move(options)), store_path_(std::move(run.store_path)) {
    if (run.fork && !run.resume.empty()) throw Error("a run is either resumed or forked, not both");
    store_.emplace(store::RunStore::open(store_path_));
    store::RunInfo info = run_info(project_, options_);
    info.project_path = run.project_path.string();
    std::map<std::string, std::string> fork_params;
    if (run.fork) {
        // Everything a fork can be refused for is checked before the run is created.
        ForkPoint point = resolve_fork(*run.fork, *store_);
        const std::string where = "run " + std::to_string(point.run) + "'s checkpoint at step " +
                                  std::to_string(point.step) + " (" + point.checkpoint.string() +
                                  ")";
        const io::Checkpoint checkpoint = io::load_checkpoint(point.checkpoint);
        if (auto mismatch = checkpoint_model_mismatch(project_, checkpoint); !mismatch.empty())
            throw Error("--fork: " + where + " does not fit the project's model:" + mismatch);
        // The base is the project as the parent trained it when it wrote the checkpoint.
        const io::Project base =
            checkpoint.project_json.empty()
                ? io::parse_project(store_->run(point.run).project_json,
                                    "run " + std::to_string(point.run) + "'s project")
                : io::parse_project(checkpoint.project_json, where);
        fork_changes_ = io::project_changes(base, effective_project(project_, options_));
        fork_params["fork.from"] = to_string(ForkSource{point.run, point.step});
        for (const auto& c : fork_changes_)
            fork_params["fork.diff." + c.path] = c.before + " -> " + c.after;
        options_.resume_from = point.checkpoint;
        options_.fork = true;
        info.parent_run = point.run;
        info.parent_checkpoint = std::filesystem::absolute(point.checkpoint).string();
        fork_point_ = std::move(point);
    } else if (!run.resume.empty()) {
        options_.resume_from = resolve_resume(run.resume, *store_, info.parent_run);
        info.parent_checkpoint = std::filesystem::absolute(options_.resume_from).string();
    }
    id_ = store_->create_run(info);
    options_.run_id = id_;
    if (!fork_params.empty()) store_->set_params(id_, fork_params);
    options_.checkpoint_dir = !run.checkpoint_dir.empty()
                                  ? run.checkpoint_dir
                                  : store_->artifact_folder(id_) / "checkpoints";
}

RecordedRun::~RecordedRun() = default;

Trainer& RecordedRun::prepare() {
    if (trainer_) return *trainer_;
    try {
        trainer_ = std::make_unique<Trainer>(project_, options_);
    } catch (const Error& e) {
        fail(e.what());
        throw;
    }
    record_run_params(*store_, id_, *trainer_, project_);
    return *trainer_;
}

TrainResult RecordedRun::run(EventSink* sink) {
    Trainer& trainer = prepare();
    StoreSink store_sink(*store_, id_);
    FanOut fan;
    fan.add(store_sink);
    if (sink) fan.add(*sink);
    trainer.set_sink(&fan);
    struct Unset { // the fan and the store sink end with this call, whatever happens
        Trainer& trainer;
        ~Unset() { trainer.set_sink(nullptr); }
    } unset{trainer};
    TrainResult result = trainer.run();
    try {
        record_test_metrics(*store_, id_, result);
    } catch (const store::StoreError& e) {
        // The run ended as it did; the store only lacks its test metrics (not a failed run).
        const std::string what =
            std::string("the run store could not record the test metrics: ") + e.what();
        result.error += (result.error.empty() ? "" : "; ") + what;
        if (sink) sink->on_event(LogMessage{LogLevel::Warning, what});
    }
    return result;
}

void RecordedRun::fail(const std::string& message) noexcept {
    try {
        store_->finish_run(id_, store::RunStatus::Failed, message);
    } catch (const std::exception&) {
        // Already failing on the store: the caller reports the message itself.
    }
}

} // namespace myelin::train
