#include <myelin/train/store_sink.h>

#include <myelin/device.h>
#include <myelin/graph/analysis.h>
#include <myelin/io/project.h>
#include <myelin/train/trainer.h>

#include <map>
#include <optional>
#include <span>
#include <string>

namespace myelin::train {

namespace {
store::RunStatus to_store(RunStatus s) {
    switch (s) {
    case RunStatus::Finished:
        return store::RunStatus::Finished;
    case RunStatus::Stopped:
        return store::RunStatus::Stopped;
    case RunStatus::Failed:
        return store::RunStatus::Failed;
    }
    return store::RunStatus::Failed;
}
} // namespace

void StoreSink::on_event(const Event& e) {
    const double t = e.wall_time;
    if (auto* m = e.get<StepMetrics>()) {
        std::vector<store::MetricPoint> points = {
            {run_, "loss", m->step, m->loss, t},
            {run_, "lr", m->step, m->lr, t},
            {run_, "samples_per_second", m->step, m->samples_per_second, t}};
        if (m->grad_scale) { // loss scaling: the scale and the steps an overflow skipped
            points.push_back({run_, "grad_scale", m->step, *m->grad_scale, t});
            points.push_back({run_, "skipped_step", m->step, m->step_skipped ? 1.0 : 0.0, t});
        }
        for (const auto& l : m->layers) {
            points.push_back({run_, "grad_norm/" + l.layer, m->step, l.grad_norm, t});
            points.push_back({run_, "weight_norm/" + l.layer, m->step, l.weight_norm, t});
            points.push_back({run_, "update_ratio/" + l.layer, m->step, l.update_ratio, t});
            points.push_back({run_, "grad_mean_abs/" + l.layer, m->step, l.grad_mean_abs, t});
            points.push_back({run_, "grad_max_abs/" + l.layer, m->step, l.grad_max_abs, t});
        }
        store_.log_metrics(points);
    } else if (auto* m = e.get<EpochMetrics>()) {
        std::vector<store::MetricPoint> points = {
            {run_, "epoch", m->step, double(m->epoch + 1), t}};
        for (const auto& [k, v] : m->train)
            points.push_back({run_, "train_" + k, m->step, v, t});
        for (const auto& [k, v] : m->validation)
            points.push_back({run_, "val_" + k, m->step, v, t});
        store_.log_metrics(points);
    } else if (auto* s = e.get<TensorSummaryEvent>()) {
        std::string kind = summary_kind_name(s->kind);
        const TensorSummary& sum = s->summary;
        std::vector<double> counts(sum.histogram.begin(), sum.histogram.end());
        store_.log_histogram(run_, kind + "/" + s->layer, s->step, sum.hist_low, sum.hist_high,
                             counts, t);
        store::MetricPoint points[] = {
            {run_, kind + "_mean/" + s->layer, s->step, sum.mean, t},
            {run_, kind + "_std/" + s->layer, s->step, sum.std, t},
            {run_, kind + "_zero_fraction/" + s->layer, s->step, sum.zero_fraction(), t},
            {run_, kind + "_nonfinite/" + s->layer, s->step, double(sum.nonfinite_count()), t}};
        store_.log_metrics(points);
    } else if (auto* f = e.get<FeatureMapEvent>()) {
        // Convolution-like outputs only: [examples, channels, height, width]. Other layers'
        // outputs (vectors, sequences) have no image to show.
        const Tensor& v = f->values;
        if (!v.defined() || v.dim() != 4 || !v.is_floating_point()) return;
        const Tensor values = (v.dtype() == DType::Float32 ? v : v.to(DType::Float32)).contiguous();
        const std::span<const int64_t> shape(v.shape().data(), 4);
        const std::span<const float> data(values.data<float>(), size_t(values.numel()));
        if (f->layer.empty())
            store_.log_probe_input(run_, f->step, shape, data, t);
        else
            store_.log_feature_map(run_, f->layer, f->step, shape, data, t);
    } else if (auto* g = e.get<TimeGradientEvent>()) {
        store_.log_time_gradients(run_,
                                  {g->layer, g->step, g->stack_layer, g->direction, t, g->norms});
    } else if (auto* c = e.get<CheckpointSaved>()) {
        store::ArtifactInfo a;
        a.kind = "checkpoint";
        a.path = c->path;
        a.step = c->step;
        a.metadata_json = "{\"epoch\": " + std::to_string(c->epoch) +
                          ", \"best\": " + (c->is_best ? "true" : "false") + "}";
        store_.add_artifact(run_, a);
    } else if (auto* b = e.get<BreakpointFired>()) {
        store_.log_event(run_, {b->step, "breakpoint", b->layer.value_or(""),
                                b->condition + ": " + b->message, t});
    } else if (auto* change = e.get<RunChanged>()) {
        store_.log_event(run_, {change->step, "change", "", change->what, t});
        for (const auto& [layer, frozen] : change->frozen)
            store_.log_event(
                run_, {change->step, kFrozenEvent, layer, frozen ? "frozen" : "training", t});
    } else if (auto* err = e.get<RunError>()) {
        error_ = err->message;
        if (err->module) error_ += " [module " + *err->module + "]";
    } else if (auto* f = e.get<Finished>()) {
        final_status_ = to_store(f->status);
        // The run's end is written even when its last points cannot be: their loss goes into the
        // run's error and is thrown after (the writer dropped them, so finish_run's own flush
        // has nothing left to wait for).
        std::string error = error_;
        std::optional<store::StoreError> lost;
        try {
            store_.flush();
        } catch (const store::StoreError& x) {
            lost = x;
            error += (error.empty() ? "" : "; ") + std::string(x.what());
        }
        try {
            store_.finish_run(run_, final_status_, error);
        } catch (const store::StoreError& x) {
            // Nothing can be written: the open-time check for dead processes ends it later.
            throw store::StoreError(std::string(x.what()) +
                                    "; the store lists the run as running until it is opened "
                                    "after this process has ended, then as interrupted");
        }
        if (lost) throw *lost;
    }
}

store::RunInfo run_info(const io::Project& project, const TrainerOptions& options) {
    store::RunInfo info;
    info.name = options.run_name;
    info.project_json = io::serialize_project(project);
    info.device = options.device.str(); // where it computes: "cpu", "cuda:0"
    info.threads = options.threads > 0         ? options.threads
                   : project.train.threads > 0 ? project.train.threads
                                               : get_num_threads();
    return info;
}

void record_run_params(store::RunStore& store, int64_t run, const Trainer& trainer,
                       const io::Project& project) {
    std::map<std::string, std::string> params{
        {"epochs", std::to_string(trainer.spec().epochs)},
        {"seed", std::to_string(trainer.spec().seed)},
        {"optimizer", trainer.spec().optimizer.kind},
        {"loss", trainer.spec().loss.kind},
        {"batch_size", std::to_string(project.data.batch_size)},
        {"threads", std::to_string(get_num_threads())},
        {"device", trainer.options().device.str()},
        {"precision", spec::name_of(trainer.spec().precision)}};
    for (auto& [key, value] : trainer.distributed_params()) // world size, hosts, backend
        params[key] = value;
    store.set_params(run, params);
    // The layers frozen from the start (the project's, or a resumed checkpoint's), so the
    // inspection tells a frozen layer from a vanishing gradient.
    const graph::ModelSpec& model = trainer.project().model;
    const graph::Analysis analysis = graph::analyze(model);
    for (size_t i = 0; i < model.nodes.size(); ++i)
        if (model.nodes[i].frozen && !analysis.nodes[i].module_name.empty())
            store.log_event(run, {0, kFrozenEvent, analysis.nodes[i].module_name, "frozen"});
}

void record_test_metrics(store::RunStore& store, int64_t run, const TrainResult& result) {
    if (result.test.empty()) return;
    std::vector<store::MetricPoint> points;
    for (const auto& [k, v] : result.test)
        points.push_back({run, "test_" + k, result.steps, v, 0});
    store.log_metrics(points);
    store.flush();
}

} // namespace myelin::train
