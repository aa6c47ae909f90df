#include <myelin/autograd.h>
#include <myelin/data/dataloader.h>
#include <myelin/error.h>
#include <myelin/io/checkpoint.h>
#include <myelin/nn/layers.h>
#include <myelin/train/evaluation.h>
#include <myelin/train/quantization.h>
#include <myelin/train/trainer.h>

#include <memory>

namespace myelin::train {

namespace {

// The first `count` batches of the training split through the evaluation transforms (no
// augmentation), in the split's order: a random order when the project holds out validation
// data, the file's order otherwise (what a benchmark against PyTorch feeds its own
// calibration).
class CalibrationBatches {
  public:
    CalibrationBatches(const Trainer& trainer, int64_t batch_size, int64_t count,
                       const std::function<void(int64_t, int64_t)>& progress)
        : loader_(trainer.data().train, options(trainer, batch_size)), progress_(progress) {
        loader_.start_epoch(0);
        total_ = std::min(count, loader_.size());
    }
    bool next(TensorList& inputs) {
        if (done_ == total_) return false;
        auto batch = loader_.next();
        if (!batch) return false;
        inputs.push_back(batch->input);
        ++done_;
        if (progress_) progress_(done_, total_);
        return true;
    }

  private:
    static data::DataLoaderOptions options(const Trainer& trainer, int64_t batch_size) {
        data::DataLoaderOptions o;
        o.batch_size = batch_size;
        o.transform = trainer.data().eval_transform;
        return o;
    }
    data::DataLoader loader_;
    std::function<void(int64_t, int64_t)> progress_;
    int64_t total_ = 0, done_ = 0;
};

// Quantization-aware training's fake quantization (PyTorch's prepare_qat with the default QAT
// qconfig): on each planned layer, moving-average observers follow the input and the output
// (after a fused ReLU) while the model trains, and forward sees the input, the weight (per
// channel, symmetric) and the output rounded to their int8 grids, with the straight-through
// estimator passing gradients. Off (`fake_quantize` false) the hooks only observe: the
// calibration pass that gives the first ranges.
class FakeQuantization {
  public:
    FakeQuantization(graph::GraphModule& model, const quant::QuantizationPlan& plan) {
        for (const quant::QuantizedLayer& layer : plan.layers) {
            nn::Module* m = nullptr;
            for (const auto& [name, child] : model.named_children())
                if (name == layer.module) m = child.get();
            Tensor* weight = nullptr;
            if (auto* linear = dynamic_cast<nn::Linear*>(m)) weight = &linear->weight;
            if (auto* conv = dynamic_cast<nn::Conv2d*>(m)) weight = &conv->weight;
            if (!weight)
                throw Error("quantization-aware training: no layer '" + layer.module + "'");
            auto state = std::make_shared<State>();
            state->weight = weight;
            state->relu = layer.relu;
            states_.push_back(state);
            handles_.push_back(m->register_forward_pre_hook(
                [this, state](nn::Module& module, const TensorList& inputs) -> TensorList {
                    const bool observe = module.is_training() || !fake_quantize;
                    if (observe)
                        state->input.observe(inputs[0].detach().to(DType::Float32).contiguous());
                    if (!fake_quantize) return {};
                    const quant::QParams q = state->input.qparams();
                    // The weight the layer's forward reads, rounded to its int8 grid; the
                    // parameter itself comes back in the forward hook.
                    state->saved = *state->weight;
                    const quant::QuantizedWeight w =
                        quant::quantize_weight_per_channel(state->saved.detach());
                    *state->weight = quant::fake_quantize_per_channel(
                        state->saved, w.scales, 0, quant::kQInt8Min, quant::kQInt8Max);
                    return {quant::fake_quantize_per_tensor(inputs[0], q.scale, q.zero_point,
                                                            quant::kQUInt8Min, quant::kQUInt8Max)};
                }));
            handles_.push_back(m->register_forward_hook(
                [this, state](nn::Module& module, const TensorList&, const Tensor& y) -> Tensor {
                    if (state->saved.defined()) *state->weight = std::exchange(state->saved, {});
                    const bool observe = module.is_training() || !fake_quantize;
                    if (observe) {
                        const Tensor seen = y.detach().to(DType::Float32).contiguous();
                        state->output.observe(state->relu ? clamp(seen, 0.0, std::nullopt) : seen);
                    }
                    if (!fake_quantize) return Tensor();
                    // With a fused ReLU the range starts at 0, so rounding clamps negatives to
                    // the zero point: the ReLU after it changes nothing, as in the int8 layer.
                    const quant::QParams q = state->output.qparams();
                    return quant::fake_quantize_per_tensor(y, q.scale, q.zero_point,
                                                           quant::kQUInt8Min, quant::kQUInt8Max);
                }));
        }
    }
    ~FakeQuantization() {
        for (HookHandle& h : handles_)
            h.remove();
        for (const auto& state : states_) // a forward that threw between the two hooks
            if (state->saved.defined()) *state->weight = state->saved;
    }
    FakeQuantization(const FakeQuantization&) = delete;
    FakeQuantization& operator=(const FakeQuantization&) = delete;

    // The observed ranges as the plan's parameters.
    void fill(quant::QuantizationPlan& plan) const {
        for (size_t i = 0; i < states_.size(); ++i) {
            plan.layers[i].input = states_[i]->input.qparams();
            plan.layers[i].output = states_[i]->output.qparams();
        }
    }

    bool fake_quantize = false;

  private:
    struct State {
        Tensor* weight = nullptr; // the layer's member its forward reads
        Tensor saved;             // the parameter while the fake-quantized weight stands in
        bool relu = false;
        quant::MovingAverageMinMaxObserver input, output;
    };
    std::vector<std::shared_ptr<State>> states_;
    std::vector<HookHandle> handles_;
};

// QAT: a training run of the project from the checkpoint's weights with fake quantization; the
// plan gets the observed ranges and `model` the trained weights (the caller converts it).
std::unique_ptr<Trainer>
train_quantization_aware(const io::Project& project, const std::filesystem::path& project_dir,
                         const std::filesystem::path& checkpoint, const io::Checkpoint& saved,
                         quant::QuantizationPlan& plan, const QuantizeOptions& options) {
    io::Project qat = project;
    qat.train.epochs = options.qat_epochs;
    if (options.qat_lr) qat.train.optimizer.options.set("lr", *options.qat_lr);
    TrainerOptions o;
    o.project_dir = project_dir.empty() ? std::filesystem::path(".") : project_dir;
    o.threads = options.threads;
    o.init_weights = checkpoint;
    o.text_encoding = saved.description.text_encoding;
    auto trainer = std::make_unique<Trainer>(qat, o);
    plan.observer = quant::ObserverKind::MovingAverageMinMax;
    plan.qat_epochs = options.qat_epochs;
    FakeQuantization fake(trainer->model(), plan);
    {
        CalibrationBatches batches(*trainer, project.data.batch_size, options.calibration_batches,
                                   options.progress);
        graph::GraphModule& model = trainer->model();
        const bool was_training = model.is_training();
        model.eval();
        autograd::NoGradGuard no_grad;
        TensorList inputs;
        int64_t seen = 0;
        while (batches.next(inputs)) {
            model(inputs);
            inputs.clear();
            ++seen;
        }
        model.train(was_training);
        if (seen == 0) throw Error("quantization: no calibration batch (the data is empty)");
        plan.calibration_batches = seen;
    }
    fake.fake_quantize = true;
    const TrainResult r = trainer->run();
    if (r.status != RunStatus::Finished)
        throw Error("quantization-aware training did not finish" +
                    (r.error.empty() ? std::string() : ": " + r.error));
    fake.fill(plan);
    quant::share_handed_on_parameters(plan);
    return trainer;
}

} // namespace

QuantizeResult quantize_checkpoint(const io::Project& project,
                                   const std::filesystem::path& project_dir,
                                   const std::filesystem::path& checkpoint,
                                   const std::filesystem::path& out,
                                   const QuantizeOptions& options) {
    io::Checkpoint saved = io::load_checkpoint(checkpoint);
    if (!saved.quantization.empty())
        throw Error(checkpoint.string() +
                    ": this checkpoint is already quantized; quantize the float checkpoint it "
                    "was made from");
    if (options.calibration_batches < 1)
        throw Error("calibration needs at least one batch (got " +
                    std::to_string(options.calibration_batches) + ")");
    if (options.qat_epochs < 0 ||
        (options.qat_epochs > 0 && options.scheme != quant::Scheme::Static))
        throw Error("quantization-aware training is for static quantization, with at least one "
                    "epoch");
    auto trainer = trainer_for_checkpoint(project, project_dir, checkpoint, options.threads);

    QuantizeResult result;
    result.float_bytes = quant::state_bytes(trainer->model().state_dict());
    result.plan =
        // Quantization-aware training trains each convolution as it is, BatchNorm after it.
        quant::plan_quantization(project.model, trainer->model(), options.scheme, options.observer,
                                 options.qat_epochs == 0);
    if (options.qat_epochs > 0) {
        trainer =
            train_quantization_aware(project, project_dir, checkpoint, saved, result.plan, options);
    } else if (options.scheme == quant::Scheme::Static) {
        CalibrationBatches batches(*trainer, project.data.batch_size, options.calibration_batches,
                                   options.progress);
        quant::calibrate(trainer->model(), result.plan,
                         [&](TensorList& inputs) { return batches.next(inputs); });
    }
    graph::GraphModule& model = trainer->model();
    quant::quantize_model(model, result.plan);

    const quant::QuantizedState state = quant::quantized_state(model);
    result.int8_bytes = quant::state_bytes(state.tensors);
    // The same checkpoint less what only training needs (it cannot resume: the int8 layers
    // have no gradients).
    saved.model = state.tensors;
    saved.int8_tensors = state.int8_names;
    saved.quantization = result.plan.to_json();
    saved.optimizer_kind.clear();
    saved.optimizer = {};
    saved.scheduler.reset();
    saved.grad_scaler.clear();
    io::save_checkpoint(out, saved);
    return result;
}

} // namespace myelin::train
