// The Trainer's built-in callbacks; see trainer_callbacks.h and callbacks.h.
#include "trainer_callbacks.h"

#include "optim/norm_sums.h"

#include <myelin/autocast.h>
#include <myelin/autograd.h>
#include <myelin/data/dataset.h>
#include <myelin/generator.h>
#include <myelin/nn/module.h>
#include <myelin/optim/optimizer.h>
#include <myelin/train/capture.h>
#include <myelin/train/early_stopping.h>
#include <myelin/train/trainer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace myelin::train {

std::string zero_padded(int64_t value, int width) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%0*lld", width, static_cast<long long>(value));
    return buffer;
}

// --- SummaryCapture ---

void SummaryCapture::before_step(Trainer& trainer) {
    remove_hooks();
    // Read each step: a paused run's capture settings may change (RunEdits).
    const int64_t every = trainer.spec().capture.summaries_every;
    capturing_ = every > 0 && (trainer.step() + 1) % every == 0;
    if (!capturing_) return;
    Trainer* t = &trainer;
    for (const auto& [name, layer] : trainer.captured_layers()) {
        hooks_.push_back(layer->register_forward_hook(
            [t, name = name](nn::Module&, const TensorList&, const Tensor& out) {
                if (out.defined() && is_floating(out.dtype()))
                    t->report(TensorSummaryEvent{name, SummaryKind::Activation, t->epoch(),
                                                 t->step() + 1, summarize(out.detach())});
                return Tensor();
            }));
        hooks_.push_back(layer->register_full_backward_hook(
            [t, name = name](nn::Module&, const TensorList&, const TensorList& grad_out) {
                if (grad_out.empty() || !grad_out[0].defined()) return;
                // Loss scaling: backward runs on the scaled loss; summarise the true gradient.
                const double scale = t->grad_scaler() ? t->grad_scaler()->get_scale() : 1.0;
                const Tensor g = scale == 1.0 ? grad_out[0] : grad_out[0] * (1.0 / scale);
                t->report(TensorSummaryEvent{name, SummaryKind::Gradient, t->epoch(), t->step() + 1,
                                             summarize(g)});
            }));
    }
}

void SummaryCapture::after_forward(Trainer&, const ForwardPass& pass) {
    // The run is about to fail: no gradient summaries of it, none of the NaN guard's
    // localisation pass. (Reading the loss here waits for the device, on capture steps only,
    // which wait for every summary anyway.)
    if (!hooks_.empty() && !std::isfinite(pass.loss_value())) remove_hooks();
}

void SummaryCapture::after_backward(Trainer&) {
    remove_hooks();
}

void SummaryCapture::after_step_reported(Trainer& trainer) {
    if (!capturing_) return;
    capturing_ = false;
    for (const auto& [name, layer] : trainer.captured_layers())
        for (const auto& [pname, p] : layer->named_parameters())
            trainer.report(TensorSummaryEvent{name + "." + pname, SummaryKind::Weight,
                                              trainer.epoch(), trainer.step(),
                                              summarize(p.detach())});
}

void SummaryCapture::on_epoch_end(Trainer&, EpochEnd&) {
    remove_hooks();
}

void SummaryCapture::on_run_end(Trainer&, TrainResult&) {
    remove_hooks();
}

void SummaryCapture::remove_hooks() {
    for (auto& h : hooks_)
        h.remove();
    hooks_.clear();
}

// --- NonFiniteLossGuard ---

std::string nonfinite_output_text(Trainer& trainer, const std::optional<std::string>& layer,
                                  const std::string& none) {
    if (!layer) return none;
    return "; the first non-finite output is layer " + *layer + "'s (" +
           trainer.model().child(*layer)->type_name() + ")";
}

void NonFiniteLossGuard::after_loss(Trainer& trainer, const ForwardPass& pass) {
    const double loss = pass.loss_value();
    if (std::isfinite(loss)) return;
    const auto where = trainer.first_nonfinite_output(pass.batch);
    throw TrainingFailure(
        "the loss became " + std::string(std::isnan(loss) ? "NaN" : "infinite") + " at step " +
            std::to_string(trainer.step() + 1) + " (epoch " + std::to_string(trainer.epoch() + 1) +
            ")" +
            nonfinite_output_text(
                trainer, where, "; every layer's output was finite, so the loss itself overflowed"),
        where);
}

// --- GradientMonitor ---

namespace {
TrainingFailure nonfinite_gradient(int64_t step, const std::optional<std::string>& layer) {
    return TrainingFailure("a gradient became non-finite at step " + std::to_string(step) +
                               (layer ? " in " + *layer : std::string()) +
                               " (try a lower learning rate or gradient clipping)",
                           layer);
}
} // namespace

void GradientMonitor::after_backward(Trainer& trainer) {
    // Loss scaling skips a step whose gradients overflowed: nothing to measure, nothing wrong.
    skipped_ = trainer.gradients_overflowed();
    const spec::TrainSpec& spec = trainer.spec();
    const int64_t norms_every = spec.capture.layer_norms ? spec.capture.layer_norms_every : 0;
    norms_now_ = !skipped_ && norms_every > 0 && (trainer.step() + 1) % norms_every == 0;
    fused_ = !skipped_ && trainer.optimizer().supports_step_stats() && !spec.clip_grad_norm &&
             !spec.clip_grad_value;
    // Off the layer-norm steps only Σg² (the non-finite check): no extra pass over the weights.
    trainer.optimizer().collect_step_stats(fused_, norms_now_);
    if (skipped_) {
        stats_.clear();
        before_.clear();
        return;
    }
    if (!fused_) measure_before_step(trainer);
}

void GradientMonitor::after_optimizer_step(Trainer& trainer, StepMetrics& metrics) {
    if (skipped_) return;
    if (fused_) {
        trainer.optimizer().collect_step_stats(false);
        after_fused_step(trainer, metrics);
    } else {
        measure_after_step(trainer, metrics);
    }
}

void GradientMonitor::after_fused_step(Trainer& trainer, StepMetrics& metrics) {
    const optim::Optimizer& optimizer = trainer.optimizer();
    std::vector<LayerStats> layers;
    double grad_squares = 0;
    std::optional<std::string> bad_layer;
    for (const auto& [name, layer] : trainer.captured_layers()) {
        auto params = layer->parameters();
        if (params.empty()) continue;
        MagnitudeStats g;
        UpdateSquares u;
        for (const auto& p : params) {
            if (const optim::StepStats* s = optimizer.step_stats(p)) {
                g += MagnitudeStats{s->grad_squares, s->grad_abs, s->grad_max_abs, s->count};
                u += UpdateSquares{s->update_squares, s->weight_squares};
            } else { // not updated (frozen, or no gradient this step): unchanged weights
                if (p.grad().defined()) g += magnitude_stats(p.grad());
                if (norms_now_) u.weight += sum_of_squares(p);
            }
        }
        if (!std::isfinite(g.sum_squares)) bad_layer = name; // the last: nearest the output
        grad_squares += g.sum_squares;
        if (norms_now_)
            layers.push_back({name, std::sqrt(g.sum_squares), std::sqrt(u.weight), u.ratio(),
                              g.mean_abs(), g.max_abs});
    }
    // The step has been taken with the non-finite gradient; the run fails now, before anything
    // (checkpoint, validation) uses the weights.
    if (!std::isfinite(grad_squares)) throw nonfinite_gradient(trainer.step(), bad_layer);
    if (norms_now_) metrics.layers = std::move(layers);
}

namespace {

// A captured layer with parameters, and its sums before the step.
struct MeasuredLayer {
    std::string name;
    std::vector<Tensor> params;
    MagnitudeStats grad; // norm steps: Σg², Σ|g|, max |g|, count
    double grad_squares = 0.0, weight_squares = 0.0;
};

// Off the host the sums come from the device's table, in one read for the whole model
// (optim::detail::norm_sums); on it in one pass over each tensor (capture.h).
void measure_layers(std::vector<MeasuredLayer>& layers, bool norms) {
    if (layers.empty()) return;
    if (layers.front().params.front().device().is_cpu()) {
        for (MeasuredLayer& l : layers)
            for (const Tensor& p : l.params) {
                if (p.grad().defined()) {
                    if (norms)
                        l.grad += magnitude_stats(p.grad());
                    else
                        l.grad_squares += sum_of_squares(p.grad());
                }
                if (norms) l.weight_squares += sum_of_squares(p);
            }
    } else {
        std::vector<optim::detail::NormRequest> requests;
        for (const MeasuredLayer& l : layers)
            for (const Tensor& p : l.params) {
                if (p.grad().defined()) {
                    requests.push_back({p.grad(), 2.0});
                    if (norms) {
                        requests.push_back({p.grad(), 1.0});
                        requests.push_back({p.grad(), INFINITY});
                    }
                }
                if (norms) requests.push_back({p.detach(), 2.0});
            }
        const std::vector<double> sums = optim::detail::norm_sums(requests);
        size_t k = 0;
        for (MeasuredLayer& l : layers)
            for (const Tensor& p : l.params) {
                if (p.grad().defined()) {
                    if (norms) {
                        l.grad +=
                            MagnitudeStats{sums[k], sums[k + 1], sums[k + 2], p.grad().numel()};
                        k += 3;
                    } else {
                        l.grad_squares += sums[k++];
                    }
                }
                if (norms) l.weight_squares += sums[k++];
            }
    }
    if (norms)
        for (MeasuredLayer& l : layers)
            l.grad_squares = l.grad.sum_squares;
}

// ||after - before||² and ||before||² of each layer's parameters, in the same two ways.
std::vector<UpdateSquares> measure_updates(const std::vector<std::vector<Tensor>>& before,
                                           const std::vector<std::vector<Tensor>>& after) {
    std::vector<UpdateSquares> updates(before.size());
    if (before.empty()) return updates;
    if (before.front().front().device().is_cpu()) {
        for (size_t i = 0; i < before.size(); ++i)
            for (size_t j = 0; j < before[i].size(); ++j)
                updates[i] += update_squares(before[i][j], after[i][j]);
        return updates;
    }
    autograd::NoGradGuard no_grad;
    std::vector<optim::detail::NormRequest> requests;
    for (size_t i = 0; i < before.size(); ++i)
        for (size_t j = 0; j < before[i].size(); ++j) {
            // In double, as update_squares subtracts on the host.
            const Tensor b = before[i][j].to(DType::Float64);
            requests.push_back({after[i][j].detach().to(DType::Float64) - b, 2.0});
            requests.push_back({b, 2.0});
        }
    const std::vector<double> sums = optim::detail::norm_sums(requests);
    size_t k = 0;
    for (size_t i = 0; i < before.size(); ++i)
        for (size_t j = 0; j < before[i].size(); ++j, k += 2)
            updates[i] += UpdateSquares{sums[k], sums[k + 1]};
    return updates;
}

} // namespace

void GradientMonitor::measure_before_step(Trainer& trainer) {
    stats_.clear();
    before_.clear();
    std::vector<MeasuredLayer> layers;
    for (const auto& [name, layer] : trainer.captured_layers()) {
        auto params = layer->parameters();
        if (!params.empty()) layers.push_back({name, std::move(params), {}, 0.0, 0.0});
    }
    measure_layers(layers, norms_now_);
    double grad_squares = 0;
    std::optional<std::string> bad_layer;
    for (const MeasuredLayer& l : layers) {
        const double g2 = l.grad_squares;
        if (!std::isfinite(g2)) bad_layer = l.name; // the last in forward order: nearest the output
        grad_squares += g2;
        if (norms_now_) {
            stats_.push_back({l.name, std::sqrt(g2), std::sqrt(l.weight_squares), 0.0,
                              l.grad.mean_abs(), l.grad.max_abs});
            std::vector<Tensor> copies;
            for (const auto& p : l.params)
                copies.push_back(p.detach().clone());
            before_.push_back(std::move(copies));
        }
    }
    if (!std::isfinite(grad_squares)) throw nonfinite_gradient(trainer.step() + 1, bad_layer);
}

void GradientMonitor::measure_after_step(Trainer& trainer, StepMetrics& metrics) {
    if (stats_.empty()) return;
    std::vector<std::vector<Tensor>> after;
    for (const auto& [name, layer] : trainer.captured_layers()) {
        auto params = layer->parameters();
        if (!params.empty()) after.push_back(std::move(params));
    }
    const std::vector<UpdateSquares> updates = measure_updates(before_, after);
    for (size_t i = 0; i < stats_.size(); ++i)
        stats_[i].update_ratio = updates[i].ratio();
    metrics.layers = std::move(stats_);
    stats_.clear();
    before_.clear();
}

// --- FeatureMapProbe ---

std::vector<data::Example> probe_examples(Trainer& trainer) {
    const DataSplits& data = trainer.data();
    auto source = data.validation && data.validation->size() > 0 ? data.validation : data.train;
    // One generator for the examples in order: the same probe batch on every run of the project.
    Generator gen(trainer.spec().seed);
    std::vector<data::Example> examples;
    for (int64_t i = 0; i < std::min<int64_t>(FeatureMapProbe::kProbeExamples, source->size());
         ++i) {
        data::Example e = source->get(i);
        if (data.eval_transform) e.input = (*data.eval_transform)(e.input, gen);
        examples.push_back(std::move(e));
    }
    return examples;
}

void FeatureMapProbe::on_run_start(Trainer&) {
    prepared_ = false;
    input_reported_ = false;
}

void FeatureMapProbe::after_step_reported(Trainer& trainer) {
    const int64_t every = trainer.spec().capture.feature_maps_every;
    if (every <= 0 || trainer.step() % every != 0) return;
    if (!prepared_) {
        // Taken on first use (their own generator: the run's randomness is untouched), so a
        // paused run that turns feature maps on gets them too.
        TensorList inputs;
        for (data::Example& e : probe_examples(trainer))
            inputs.push_back(std::move(e.input));
        probe_ = inputs.empty() ? Tensor() : stack(inputs);
        prepared_ = true;
    }
    if (!probe_.defined()) return;
    autograd::NoGradGuard no_grad;
    AutocastGuard amp(trainer.autocast_dtype());
    graph::GraphModule& model = trainer.model();
    const bool was_training = model.is_training();
    model.eval();
    if (!input_reported_) {
        // The examples themselves, once: the views show what the maps were taken from.
        trainer.report(FeatureMapEvent{"", trainer.epoch(), trainer.step(), snapshot(probe_)});
        input_reported_ = true;
    }
    std::vector<HookHandle> hooks;
    Trainer* t = &trainer;
    for (const auto& [name, layer] : trainer.captured_layers())
        hooks.push_back(layer->register_forward_hook(
            [t, name = name](nn::Module&, const TensorList&, const Tensor& out) {
                t->report(FeatureMapEvent{name, t->epoch(), t->step(), snapshot(out)});
                return Tensor();
            }));
    try {
        model(probe_.to(trainer.options().device));
    } catch (...) {
        for (auto& h : hooks)
            h.remove();
        model.train(was_training);
        throw;
    }
    for (auto& h : hooks)
        h.remove();
    model.train(was_training);
}

// --- PeriodicValidation ---

void PeriodicValidation::after_step_reported(Trainer& trainer) {
    if (trainer.step() % every_ != 0) return;
    EpochMetrics mid{trainer.epoch(),
                     trainer.step(),
                     {{"loss", trainer.epoch_loss()}},
                     trainer.evaluate(trainer.data().validation),
                     {}};
    trainer.report(std::move(mid));
    trainer.restart_step_timer();
}

// --- EarlyStoppingMonitor ---

void EarlyStoppingMonitor::on_epoch_end(Trainer& trainer, EpochEnd& end) {
    // Without validation data a val_ metric does not exist: then only an enabled early stopping
    // is an error (unknown metric).
    const spec::TrainSpec& spec = trainer.spec();
    const std::string& tracked = spec.early_stopping.metric;
    const bool tracked_exists = !tracked.starts_with("val_") || trainer.data().validation;
    if (!spec.early_stopping.enabled && !(spec.checkpoints.keep_best && tracked_exists)) return;
    EarlyStopping& early_stopping = trainer.early_stopping();
    end.is_best = early_stopping.update(
        trainer.metric_value(tracked, end.metrics.train, end.metrics.validation));
    if (spec.early_stopping.enabled && early_stopping.should_stop()) {
        end.stop = true;
        end.stop_reason = early_stopping.stop_reason();
    }
}

// --- CheckpointKeeper ---

void CheckpointKeeper::on_epoch_end(Trainer& trainer, EpochEnd& end) {
    const int64_t epochs_done = trainer.epoch() + 1;
    if (end.is_best && spec_.keep_best) {
        const auto path = trainer.save_checkpoint("best.safetensors", epochs_done, 0);
        if (!path.empty()) {
            best_ = path;
            trainer.report(CheckpointSaved{path.string(), epochs_done, trainer.step(), true});
        }
    }
    const bool periodic = spec_.every_epochs > 0 && epochs_done % spec_.every_epochs == 0;
    if (!periodic && !end.last_epoch && !end.stop) return;
    const auto path = trainer.save_checkpoint(
        "epoch-" + zero_padded(epochs_done, 4) + ".safetensors", epochs_done, 0);
    if (path.empty()) return;
    last_ = path;
    trainer.report(CheckpointSaved{path.string(), epochs_done, trainer.step(), false});
    periodic_.push_back(path);
    while (int64_t(periodic_.size()) > spec_.keep_last) {
        std::error_code ignored;
        std::filesystem::remove(periodic_.front(), ignored);
        periodic_.erase(periodic_.begin());
    }
}

void CheckpointKeeper::on_run_end(Trainer&, TrainResult& result) {
    if (!best_.empty()) result.best_checkpoint = best_;
    // A stop between steps writes a later checkpoint itself.
    if (result.last_checkpoint.empty()) result.last_checkpoint = last_;
}

} // namespace myelin::train
