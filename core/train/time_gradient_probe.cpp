// TimeGradientProbe (trainer_callbacks.h): the gradient through time of the recurrent layers on
// the probe examples.
#include "trainer_callbacks.h"

#include <myelin/autocast.h>
#include <myelin/autograd.h>
#include <myelin/data/dataloader.h>
#include <myelin/data/dataset.h>
#include <myelin/nn/loss.h>
#include <myelin/nn/recurrent.h>
#include <myelin/nn/recurrent_gradients.h>
#include <myelin/train/trainer.h>

#include <algorithm>
#include <map>
#include <optional>

namespace myelin::train {

namespace {

bool has_recurrent_layer(nn::Module& module) {
    for (const auto& [name, m] : module.named_modules())
        if (dynamic_cast<nn::RNNBase*>(m.get())) return true;
    return false;
}

// Puts every parameter's .grad aside for the probe's backward and back afterwards: the
// optimizer's step is done by then, but callbacks after this one and the next step's zero_grad
// must find the training gradients as they were.
class GradientsAside {
  public:
    explicit GradientsAside(std::vector<Tensor> params) : params_(std::move(params)) {
        for (Tensor& p : params_) {
            saved_.push_back(p.grad());
            p.set_grad(Tensor());
        }
    }
    ~GradientsAside() {
        for (size_t i = 0; i < params_.size(); ++i)
            params_[i].set_grad(saved_[i]);
    }
    GradientsAside(const GradientsAside&) = delete;
    GradientsAside& operator=(const GradientsAside&) = delete;

  private:
    std::vector<Tensor> params_;
    std::vector<Tensor> saved_;
};

} // namespace

void TimeGradientProbe::on_run_start(Trainer&) {
    prepared_ = false;
}

void TimeGradientProbe::after_step_reported(Trainer& trainer) {
    const int64_t every = trainer.spec().capture.feature_maps_every;
    if (every <= 0 || trainer.step() % every != 0) return;
    // The captured layers may change while a run is paused (RunEdits): looked up each time.
    layers_.clear();
    for (const auto& [name, layer] : trainer.captured_layers())
        if (has_recurrent_layer(*layer)) layers_.emplace_back(name, layer);
    if (layers_.empty()) return;
    if (!prepared_) {
        // The examples FeatureMapProbe takes, with their targets (their own generator).
        std::vector<data::Example> examples = probe_examples(trainer);
        if (!examples.empty() && examples.front().target.defined())
            probe_ = data::default_collate(examples);
        prepared_ = true;
    }
    if (!probe_.input.defined()) return;
    graph::GraphModule& model = trainer.model();
    const bool was_training = model.is_training();
    auto recorder = std::make_shared<nn::RecurrentGradientRecorder>();
    // One scope per recurrent layer, alive while that layer runs forward (a pre-hook opens it,
    // the forward hook closes it): its backward then records under the layer's name.
    std::optional<nn::RecordRecurrentGradients> scope;
    std::vector<HookHandle> hooks;
    for (const auto& [name, layer] : layers_) {
        hooks.push_back(layer->register_forward_pre_hook(
            [&scope, recorder, name = name](nn::Module&, const TensorList&) {
                scope.emplace(recorder, name);
                return TensorList();
            }));
        hooks.push_back(
            layer->register_forward_hook([&scope](nn::Module&, const TensorList&, const Tensor&) {
                scope.reset();
                return Tensor();
            }));
    }
    auto cleanup = [&] {
        scope.reset();
        for (auto& h : hooks)
            h.remove();
        model.train(was_training);
    };
    model.eval();
    try {
        GradientsAside aside(model.parameters());
        Tensor loss;
        {
            AutocastGuard amp(trainer.autocast_dtype());
            const Device device = trainer.options().device;
            const Tensor target =
                probe_.target.defined() ? probe_.target.to(device) : probe_.target;
            loss = trainer.loss()(model(probe_.input.to(device)), target);
        }
        cleanup();
        if (loss.requires_grad()) loss.backward();
    } catch (...) {
        cleanup();
        throw;
    }
    // By layer, then stack layer and direction, each reported once (of a layer called twice in
    // one forward, one call's record is kept).
    std::map<std::tuple<std::string, int64_t, int>, std::vector<double>> series;
    for (nn::RecurrentStepGradients& g : recorder->take())
        series[{g.label, g.layer, g.direction}] = std::move(g.norms);
    for (const auto& [name, layer] : layers_)
        for (auto& [key, norms] : series)
            if (std::get<0>(key) == name)
                trainer.report(TimeGradientEvent{name, trainer.epoch(), trainer.step(),
                                                 std::get<1>(key), std::get<2>(key), norms});
}

} // namespace myelin::train
