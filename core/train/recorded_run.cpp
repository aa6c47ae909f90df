#include <myelin/error.h>
#include <myelin/train/recorded_run.h>
#include <myelin/train/store_sink.h>

namespace myelin::train {

std::filesystem::path resolve_resume(const std::string& what, store::RunStore& store,
                                     std::optional<int64_t>& parent_run) {
    const bool numeric = !what.empty() && what.find_first_not_of("0123456789") == std::string::npos;
    if (!numeric) {
        if (!std::filesystem::exists(what))
            throw Error("--resume: no checkpoint file '" + what + "' (and not a run id)");
        return what;
    }
    const int64_t id = std::stoll(what);
    store::Run run = store.run(id);
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

RecordedRun::RecordedRun(const io::Project& project, TrainerOptions options, RecordedRunOptions run)
    : project_(project), options_(std::move(options)), store_path_(std::move(run.store_path)) {
    store_.emplace(store::RunStore::open(store_path_));
    store::RunInfo info = run_info(project_, options_);
    if (!run.resume.empty()) {
        options_.resume_from = resolve_resume(run.resume, *store_, info.parent_run);
        info.parent_checkpoint = std::filesystem::absolute(options_.resume_from).string();
    }
    id_ = store_->create_run(info);
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
    record_test_metrics(*store_, id_, result);
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
