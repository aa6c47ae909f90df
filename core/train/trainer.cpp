// The training loop. One optimizer step = `accumulation_steps` micro-batches (the loader's
// batches), each loss weighted by its share of the group's samples so that accumulating equals
// training on the big batch. What else a run does (capture, norms, NaN localisation, feature
// maps, early stopping, checkpoint keeping) is in trainer_callbacks.cpp, on the hook points.
#include <myelin/autocast.h>
#include <myelin/autograd.h>
#include <myelin/cuda.h>
#include <myelin/data/dataloader.h>
#include <myelin/device.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/graph/analysis.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/safetensors.h>
#include <myelin/nn/loss.h>
#include <myelin/optim/optimizer.h>
#include <myelin/store/run_store.h>
#include <myelin/train/capture.h>
#include <myelin/train/class_weights.h>
#include <myelin/train/components.h>
#include <myelin/train/early_stopping.h>
#include <myelin/train/metrics.h>
#include <myelin/train/trainer.h>

#include "backend/backend.h"
#include "data_parallel.h"
#include "parameter_groups.h"
#include "trainer_callbacks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <thread>

namespace myelin::train {

namespace {

// training.precision "bfloat16" ("float16") runs every forward pass (training, evaluation,
// probes) under bf16 (fp16) autocast, so evaluation measures the model as it trains; backward
// and the optimizer step stay outside it.
std::optional<DType> autocast_for(const spec::TrainSpec& spec) {
    if (spec.precision == spec::Precision::BFloat16) return DType::BFloat16;
    if (spec.precision == spec::Precision::Float16) return DType::Float16;
    return std::nullopt;
}

data::DataLoaderOptions loader_options(const spec::DataSpec& d, uint64_t seed, bool train,
                                       data::TransformPtr transform) {
    data::DataLoaderOptions o;
    o.batch_size = d.batch_size;
    o.shuffle = train && d.shuffle;
    o.drop_last = train && d.drop_last;
    o.num_workers = d.num_workers;
    o.seed = seed;
    o.transform = std::move(transform);
    return o;
}

} // namespace

io::Project effective_project(const io::Project& project, const TrainerOptions& options) {
    io::Project p = project;
    if (options.epochs) p.train.epochs = *options.epochs;
    if (options.seed) p.train.seed = *options.seed;
    if (options.lr) p.train.optimizer.options.set("lr", *options.lr);
    if (options.threads > 0) p.train.threads = options.threads;
    if (options.flush_denormal) p.train.flush_denormal = true;
    p.train.device = options.device.str(); // where it trains ("cpu" is not written)
    if (options.dist_sync_batchnorm) p.train.distributed.sync_batchnorm = true;
    return p;
}

Trainer::Trainer(const io::Project& project, TrainerOptions options)
    : project_(project), spec_(effective_project(project, options).train),
      options_(std::move(options)),
      control_(options_.control ? options_.control : std::make_shared<RunControl>()) {
    check_options();
    // The model is initialised from the seed, as torch.manual_seed(seed) before building it.
    manual_seed(spec_.seed);
    model_ = graph::build(project_.model);
    if (model_->input_nodes().size() != 1)
        throw Error("the model has " + std::to_string(model_->input_nodes().size()) +
                    " Input nodes; training needs exactly one (the data's input)");
    data_ = make_data(project_.data, options_.project_dir, spec_.seed,
                      options_.text_encoding ? &*options_.text_encoding : nullptr);
    check_data_fits_model();
    setup_loss();
    setup_optimizer();
    setup_loss_scaling();
    setup_train_loader();
    if (spec_.scheduler) {
        schedule_ = std::make_unique<Schedule>(*spec_.scheduler, *optimizer_,
                                               schedule_steps(spec_, steps_per_epoch_));
    }
    const auto& es = spec_.early_stopping;
    early_stopping_ =
        std::make_unique<EarlyStopping>(es.metric, es.mode, int(es.patience), es.min_delta);
    select_captured_layers();
    load_starting_state();
    move_to_device();
    add_builtin_callbacks();
    progress_.epochs = spec_.epochs;
    progress_.steps_per_epoch = steps_per_epoch_;
    progress_.total_steps = steps_per_epoch_ * spec_.epochs;
    progress_.step = step_;
    progress_.epoch = epoch_;
}

void Trainer::check_options() {
    if (spec_.epochs < 1) throw Error("epochs must be at least 1");
    if (options_.lr && !(std::isfinite(*options_.lr) && *options_.lr >= 0))
        throw Error("lr must be a finite number >= 0, got " + std::to_string(*options_.lr));
    if (options_.lr && !options_.resume_from.empty() && !options_.fork)
        throw Error("a resume goes on with the checkpoint's learning rate; fork the run to "
                    "change it");
    if (spec_.threads > 0) set_num_threads(spec_.threads);
    check_training_backend(options_.device); // before anything is built
    check_precision(spec_.precision, options_.device);
}

void Trainer::setup_loss() {
    // After the fit check: class weights name the data's classes and count the model's outputs.
    loss_context_ = make_loss_context();
    loss_ = make_loss(spec_.loss, loss_context_);
    // A loss without a "reduction" option (a plugin's) is taken as a mean.
    const spec::LossKind& k = spec::kind_of(spec::loss_kinds(), spec_.loss, "loss");
    graph::Attrs o = graph::with_defaults(k.options, spec_.loss.options);
    sum_reduction_ = o.contains("reduction") && o.get_string("reduction") == "sum";
}

void Trainer::setup_optimizer() {
    // Parameter groups: one per distinct lr multiplier (frozen layers are left out, as
    // filter(lambda p: p.requires_grad, ...) in PyTorch), lr = base lr x multiplier.
    const detail::ParameterLayout layout = detail::parameter_layout(project_.model, *model_);
    std::vector<optim::ParamGroup> groups = detail::parameter_groups(layout, *model_);
    const spec::OptimizerKind& ok =
        spec::kind_of(spec::optimizer_kinds(), spec_.optimizer, "optimizer");
    const double base_lr =
        graph::with_defaults(ok.options, spec_.optimizer.options).get_float("lr");
    group_lr_multipliers_ = layout.multipliers;
    for (size_t g = 0; g < groups.size(); ++g)
        if (layout.multipliers[g] != 1.0) groups[g].options["lr"] = base_lr * layout.multipliers[g];
    if (groups.empty()) throw Error("the model has no trainable parameters (all frozen?)");
    parameters_ = model_->parameters();
    optimizer_ = make_optimizer(spec_.optimizer, std::move(groups));
}

void Trainer::setup_train_loader() {
    // Loader workers only on cores the compute threads leave free: where the OpenMP team holds
    // every core a worker just takes turns with it (fashion_mlp on 2 cores, 2 threads: 4% faster
    // with the batches loaded between steps). A project whose loading is heavy (decoding
    // images) gives the loader cores by training on fewer threads. The batches are the same
    // whatever the count.
    data::DataLoaderOptions train_options =
        loader_options(project_.data, spec_.seed, true, data_.train_transform);
    const int cores = int(std::thread::hardware_concurrency());
    const int compute_threads = spec_.threads > 0 ? spec_.threads : get_num_threads();
    const int free_cores = std::max(0, cores - compute_threads);
    if (cores > 0 && train_options.num_workers > free_cores) {
        init_messages_.push_back(
            {LogLevel::Info, "data loader: " + std::to_string(free_cores) + " of the " +
                                 std::to_string(train_options.num_workers) +
                                 " workers asked for (" + std::to_string(cores) + " cores, " +
                                 std::to_string(compute_threads) +
                                 " compute threads; fewer training threads leave the loader "
                                 "cores)"});
        train_options.num_workers = free_cores;
    }
    if (options_.communicator) setup_data_parallel(train_options);
    examples_per_epoch_ =
        train_options.sampler ? train_options.sampler->size() : data_.train->size();
    train_loader_ = std::make_unique<data::DataLoader>(data_.train, train_options);
    micro_batches_per_epoch_ = train_loader_->size();
    if (micro_batches_per_epoch_ == 0)
        throw Error("the training split has fewer examples (" +
                    std::to_string(data_.train->size()) + ") than one batch (" +
                    std::to_string(project_.data.batch_size) + ") with drop_last");
    steps_per_epoch_ = optimizer_steps(micro_batches_per_epoch_, spec_.accumulation_steps);
}

void Trainer::load_starting_state() {
    // The project's initial weights (relative to its folder) unless given here; a resume or fork
    // starts from its checkpoint instead.
    if (options_.init_weights.empty() && !spec_.init_weights.empty() &&
        options_.resume_from.empty()) {
        const std::filesystem::path p = spec_.init_weights;
        options_.init_weights = p.is_absolute() ? p : options_.project_dir / p;
    }
    if (!options_.init_weights.empty()) load_initial_weights();
    if (!options_.resume_from.empty()) load_resume_checkpoint();
}

Trainer::~Trainer() = default;

void Trainer::move_to_device() {
    if (options_.device.is_cpu()) return;
    // The project's device numerics, for this run and what it evaluates.
    backend::Backend& device = backend::get(options_.device.type);
    device.set_deterministic(spec_.deterministic);
    device.set_allow_tf32(spec_.allow_tf32);
    // Handles held elsewhere (the optimizer's groups, parameters_, layers_) follow the move.
    model_->to(options_.device);
    for (size_t g = 0; g < optimizer_->param_groups().size(); ++g)
        for (size_t i = 0; i < optimizer_->param_groups()[g].params.size(); ++i)
            for (auto& [key, t] : optimizer_->state(g, i))
                t = t.to(options_.device);
}

data::Example Trainer::on_device(const data::Example& batch) const {
    if (options_.device.is_cpu()) return batch;
    return {batch.input.to(options_.device),
            batch.target.defined() ? batch.target.to(options_.device) : Tensor()};
}

void Trainer::check_data_fits_model() {
    const Dims& declared = model_->input_shapes()[0];
    if (!(declared == data_.input_shape))
        throw Error("the model's Input expects examples of shape " + declared.str() +
                    " but the data gives " + data_.input_shape.str() +
                    " (set the Input node's shape to " + data_.input_shape.str() + ")");
    auto analysis = graph::analyze(project_.model, 2);
    std::optional<graph::TensorType> out;
    for (size_t i = 0; i < project_.model.nodes.size(); ++i)
        if (project_.model.nodes[i].kind == "Output") out = analysis.nodes[i].output;
    if (!out) throw Error("the model's output shape could not be inferred");
    const Dims& s = out->shape;
    const std::string& loss = spec_.loss.kind;
    // The losses of the other target type, from their records ("MSELoss, L1Loss or HuberLoss").
    auto losses_taking = [](bool class_indices) {
        std::vector<std::string> names;
        for (const spec::LossKind& k : spec::loss_kinds())
            if (k.takes_class_indices == class_indices) names.push_back(k.name);
        std::string text;
        for (size_t i = 0; i < names.size(); ++i)
            text += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
        return text;
    };
    if (spec::loss_takes_class_indices(loss)) {
        if (!data_.classification())
            throw Error(loss +
                        " needs class labels, but the data's targets are numeric "
                        "(regression): choose " +
                        losses_taking(false));
        int64_t classes = int64_t(data_.class_names.size());
        if (s.size() != 2 || s[1] != classes)
            throw Error("the model's output is " + graph::to_string(*out) + " but " + loss +
                        " on " + std::to_string(classes) + " classes needs [N, " +
                        std::to_string(classes) + "] (set the last layer's output size to " +
                        std::to_string(classes) + ")");
        return;
    }
    // Element-wise losses: the output must have the target's shape (no silent broadcasting of
    // [N, 1] against [N]).
    data::Example e = data_.train->get(0);
    Dims target{2};
    for (int64_t v : e.target.sizes())
        target.push_back(v);
    if (data_.classification())
        throw Error(loss +
                    " needs float targets of the output's shape; this data has class "
                    "indices: choose " +
                    losses_taking(true));
    if (!(s == target))
        throw Error("the model's output " + graph::to_string(*out) +
                    " does not match the targets " + target.str() + " for " + loss +
                    (s.size() == 2 && s[1] == 1 && target.size() == 1
                         ? " (add a Flatten with start_dim 0 before the Output)"
                         : ""));
}

spec::LossContext Trainer::make_loss_context() const {
    spec::LossContext c;
    c.class_names = data_.class_names;
    c.outputs = model_outputs(project_.model);
    for (const Tensor& p : model_->parameters())
        if (is_floating(p.dtype())) {
            c.dtype = p.dtype();
            break;
        }
    return c;
}

void Trainer::report(Event event) {
    if (!sink_) return;
    try {
        sink_->on_event(event);
    } catch (const store::StoreError& e) {
        // The run store could not take a record (a full disk, a failing drive, locked past its
        // timeout). Thrown on, it would leave this step half done: the step finishes, the run
        // stops at the next step with a checkpoint there, and run() says why.
        if (!store_failure_) store_failure_ = e.what();
        control_->stop();
    }
}

void Trainer::wait_while_paused() {
    if (!control_->paused() || control_->stop_requested()) return;
    report(LogMessage{LogLevel::Info, "paused at step " + std::to_string(step_)});
    control_->wait_while_paused();
    if (!control_->stop_requested()) report(LogMessage{LogLevel::Info, "resumed"});
}

void Trainer::select_captured_layers() {
    layers_.clear();
    for (const auto& [name, child] : model_->named_children())
        if (spec_.capture.layers.empty() ||
            std::count(spec_.capture.layers.begin(), spec_.capture.layers.end(), name))
            layers_.emplace_back(name, child);
}

void Trainer::add_callback(std::shared_ptr<TrainerCallback> callback) {
    callbacks_.push_back(std::move(callback));
}

void Trainer::add_builtin_callbacks() {
    // Data-parallel first: the other callbacks see averaged gradients and global losses.
    if (data_parallel_) callbacks_.push_back(data_parallel_);
    // Capture first: it stops capturing when the loss is not finite, before the NaN guard's
    // localisation pass runs the model again.
    // The capture callbacks read their intervals from spec_ at each step (a paused run's
    // capture settings may change), so they are always there; off, they do nothing.
    callbacks_.push_back(std::make_shared<SummaryCapture>());
    if (options_.breakpoints)
        callbacks_.push_back(make_breakpoint_monitor(options_.breakpoints, options_.on_break));
    callbacks_.push_back(std::make_shared<NonFiniteLossGuard>());
    callbacks_.push_back(std::make_shared<GradientMonitor>());
    callbacks_.push_back(std::make_shared<FeatureMapProbe>());
    callbacks_.push_back(std::make_shared<TimeGradientProbe>());
    if (spec_.validate_every_steps > 0 && data_.validation)
        callbacks_.push_back(std::make_shared<PeriodicValidation>(spec_.validate_every_steps));
    callbacks_.push_back(std::make_shared<EarlyStoppingMonitor>());
    callbacks_.push_back(std::make_shared<CheckpointKeeper>(spec_.checkpoints));
}

std::optional<DType> Trainer::autocast_dtype() const {
    return autocast_for(spec_);
}

void Trainer::restart_step_timer() {
    if (tracker_) tracker_->restart_step_timer();
}

Progress Trainer::progress() const {
    std::lock_guard lock(progress_mutex_);
    return progress_;
}

double Trainer::metric_value(const std::string& name, const MetricMap& train,
                             const MetricMap& validation) const {
    auto find = [&](const MetricMap& m, const std::string& key) -> std::optional<double> {
        auto it = m.find(key);
        if (it == m.end()) return std::nullopt;
        return it->second;
    };
    std::optional<double> v;
    if (name.rfind("val_", 0) == 0)
        v = find(validation, name.substr(4));
    else if (name.rfind("train_", 0) == 0)
        v = find(train, name.substr(6));
    if (!v) {
        std::string known;
        for (const auto& [k, x] : validation)
            known += (known.empty() ? "" : ", ") + ("val_" + k);
        for (const auto& [k, x] : train)
            known += (known.empty() ? "" : ", ") + ("train_" + k);
        throw Error("unknown metric '" + name + "' (available: " + known + ")");
    }
    return *v;
}

MetricMap Trainer::evaluate(const data::DatasetPtr& dataset, ConfusionMatrix* confusion) {
    data::DataLoaderOptions eval_options =
        loader_options(project_.data, spec_.seed, false, data_.eval_transform);
    // Data-parallel: each rank evaluates its shard and the sums are combined (data_parallel.h);
    // `real_left` counts this rank's examples that are not padding.
    int64_t real_left = data_parallel_ ? data_parallel_->shard_evaluation(eval_options, *dataset,
                                                                          data_.classification())
                                       : std::numeric_limits<int64_t>::max();
    data::DataLoader loader(dataset, eval_options);
    bool was_training = model_->is_training();
    model_->eval();
    autograd::NoGradGuard no_grad;
    AutocastGuard amp(autocast_dtype());
    RunningMean loss;
    std::optional<ClassificationMetrics> cls;
    std::optional<RegressionMetrics> reg;
    if (data_.classification())
        cls.emplace(int64_t(data_.class_names.size()), data_.class_names);
    else
        reg.emplace();
    // Registered metric kinds (plugins') that fit the task, beside the built-in ones.
    std::vector<std::pair<const spec::MetricKind*, std::unique_ptr<spec::MetricAccumulator>>> extra;
    for (const spec::MetricKind& kind : spec::metric_kinds())
        if (kind.fits(data_.classification())) extra.emplace_back(&kind, kind.build());
    // Off the host each batch's loss stays on the device until the end: one read for them all
    // (added to `loss` in batch order, the values the per-batch reads would give).
    const bool read_each_loss = options_.device.is_cpu();
    const auto add_batch_loss = [this](RunningMean& mean, double value, int64_t n) {
        mean.add(sum_reduction_ ? value / double(n) : value, n); // a summed loss: per example
    };
    std::vector<std::pair<Tensor, int64_t>> device_losses;
    loader.start_epoch(0);
    while (auto next = loader.next()) {
        auto batch = std::optional<data::Example>(on_device(*next));
        Tensor out = (*model_)(batch->input);
        int64_t n = batch->input.size(0);
        if (n > real_left) { // the shard's padding (repeated examples) is weighted out
            n = std::max<int64_t>(real_left, 0);
            if (n == 0) break;
            out = out.narrow(0, 0, n);
            batch->target = batch->target.narrow(0, 0, n);
        }
        real_left -= n;
        const Tensor batch_loss = (*loss_)(out, batch->target);
        if (read_each_loss)
            add_batch_loss(loss, batch_loss.item<double>(), n);
        else
            device_losses.emplace_back(batch_loss.detach().reshape({1}).to(DType::Float64), n);
        if (cls && out.dim() == 2) cls->update(out, batch->target);
        if (reg) reg->update(out, batch->target);
        for (auto& [kind, metric] : extra)
            metric->update(out, batch->target);
    }
    if (!device_losses.empty()) {
        TensorList values;
        for (const auto& [value, n] : device_losses)
            values.push_back(value);
        const Tensor host = cat(values).to(kCPU);
        for (size_t i = 0; i < device_losses.size(); ++i)
            add_batch_loss(loss, host.data<double>()[i], device_losses[i].second);
    }
    model_->train(was_training);
    if (data_parallel_) data_parallel_->reduce_evaluation(loss, cls, reg);
    MetricMap m;
    m["loss"] = loss.mean();
    if (cls) {
        for (const auto& [k, v] : cls->scalars())
            m[k] = v;
        if (confusion) *confusion = cls->confusion_matrix();
    }
    if (reg)
        for (const auto& [k, v] : reg->scalars())
            m[k] = v;
    for (const auto& [kind, metric] : extra)
        m[kind->name] = metric->value();
    return m;
}

Tensor Trainer::predict(const data::DatasetPtr& dataset, Tensor* targets) {
    data::DataLoader loader(dataset,
                            loader_options(project_.data, spec_.seed, false, data_.eval_transform));
    bool was_training = model_->is_training();
    model_->eval();
    autograd::NoGradGuard no_grad;
    AutocastGuard amp(autocast_dtype());
    TensorList outputs, target_list;
    loader.start_epoch(0);
    while (auto batch = loader.next()) {
        outputs.push_back((*model_)(on_device(*batch).input).to(kCPU));
        if (targets) target_list.push_back(batch->target);
    }
    model_->train(was_training);
    if (outputs.empty()) return Tensor();
    if (targets) *targets = cat(target_list, 0);
    return cat(outputs, 0);
}

std::optional<std::string> Trainer::first_nonfinite_output(const data::Example& batch) {
    autograd::NoGradGuard no_grad;
    AutocastGuard amp(autocast_dtype());
    std::optional<std::string> first;
    std::vector<HookHandle> handles;
    for (const auto& [name, layer] : model_->named_children())
        handles.push_back(layer->register_forward_hook(
            [&first, name = name](nn::Module&, const TensorList&, const Tensor& out) {
                if (!first && out.defined() && is_floating(out.dtype())) {
                    TensorSummary s = summarize(out, 1);
                    if (s.nonfinite_count() > 0) first = name;
                }
                return Tensor();
            }));
    try {
        (*model_)(batch.input);
    } catch (const Error&) {
    }
    for (auto& h : handles)
        h.remove();
    return first;
}

namespace {
// The project's denormal mode on this thread and its OpenMP team for the run, then the previous.
class FlushDenormalScope {
  public:
    explicit FlushDenormalScope(bool on) : before_(flush_denormal()) {
        if (on != before_) changed_ = set_flush_denormal(on);
    }
    ~FlushDenormalScope() {
        if (changed_) set_flush_denormal(before_);
    }
    FlushDenormalScope(const FlushDenormalScope&) = delete;
    FlushDenormalScope& operator=(const FlushDenormalScope&) = delete;

  private:
    bool before_;
    bool changed_ = false;
};
} // namespace

TrainResult Trainer::run() {
    if (spec_.threads > 0) set_num_threads(spec_.threads); // this thread's OpenMP team
    const FlushDenormalScope denormals(spec_.flush_denormal);
    result_ = TrainResult();
    store_failure_.reset();
    tracker_.emplace(steps_per_epoch_ * spec_.epochs);
    report(RunStarted{options_.run_name, spec_.epochs, steps_per_epoch_, epoch_, step_});
    for (const auto& m : init_messages_)
        report(m);
    tracker_->start(step_);
    try {
        for (auto& callback : callbacks_)
            callback->on_run_start(*this);
        for (bool ended = false; epoch_ < spec_.epochs && !ended; ++epoch_) {
            const double epoch_start = ProgressTracker::steady_seconds();
            const int64_t micro = train_epoch();
            result_.train_seconds += ProgressTracker::steady_seconds() - epoch_start;
            if (micro < micro_batches_per_epoch_) {
                stop_mid_epoch(micro);
                break;
            }
            ended = end_epoch();
        }
        if (result_.status == RunStatus::Finished && data_.test) test_metrics();
    } catch (const io::WriteError& e) {
        stop_after_write_failure(e);
    } catch (const DeviceError& e) {
        if (options_.device.is_cpu())
            fail(e); // not a fault of the machine: an op the CPU cannot run
        else
            stop_after_device_fault(e);
    } catch (const std::exception& e) {
        fail(e);
    }
    if (store_failure_) {
        const std::string what = "the run store could not record the run: " + *store_failure_;
        if (result_.status == RunStatus::Stopped && result_.error.empty()) { // stopped for it
            result_.error = what + "; the run stopped after step " + std::to_string(step_) + "; " +
                            resume_hint();
            report(RunError{result_.error, epoch_, step_, std::nullopt, true});
        } else {
            report(LogMessage{LogLevel::Warning, what});
        }
    }
    try { // whatever the outcome: callbacks release their hooks and fill in the result
        for (auto& callback : callbacks_)
            callback->on_run_end(*this, result_);
    } catch (const io::WriteError& e) { // the final checkpoint
        if (result_.status != RunStatus::Failed) stop_after_write_failure(e);
    } catch (const std::exception& e) {
        if (result_.status != RunStatus::Failed) fail(e);
    }
    result_.steps = step_;
    // The store sink writes the run's end here. A failure (the last points lost, or the end
    // itself not written) is said in the result and, after Finished, to the other sinks.
    store_failure_.reset();
    report(Finished{result_.status, epoch_, step_});
    if (store_failure_) {
        const std::string what = "at the run's end the run store failed: " + *store_failure_;
        result_.error += (result_.error.empty() ? "" : "; ") + what;
        report(LogMessage{LogLevel::Warning, what});
    }
    return result_;
}

int64_t Trainer::train_epoch() {
    model_->train();
    train_loader_->start_epoch(uint64_t(epoch_), first_batch_);
    epoch_loss_ = RunningMean();
    epoch_classification_.reset();
    if (data_.classification())
        epoch_classification_.emplace(int64_t(data_.class_names.size()), data_.class_names);
    int64_t micro = first_batch_;
    first_batch_ = 0;
    while (micro < micro_batches_per_epoch_) {
        // Pause and stop are honoured here, between optimizer steps.
        if (control_->stop_requested()) break;
        wait_while_paused();
        if (control_->stop_requested()) break;
        apply_pending_edits();
        const int64_t last = std::min(micro + spec_.accumulation_steps, micro_batches_per_epoch_);
        try {
            const int64_t next = train_step(micro, last);
            if (next < last) return next; // the loader ran out early
            micro = next;
        } catch (const StepAbandoned&) {
            // A callback gave the step up: stop at the position before it (run() checkpoints).
            optimizer_->zero_grad();
            control_->stop();
            break;
        }
    }
    return micro;
}

int64_t Trainer::train_step(int64_t micro, int64_t last) {
    tracker_->restart_step_timer();
    optimizer_->zero_grad();
    unscaled_ = overflowed_ = false;
    int64_t group_samples = 0; // to weight each micro-batch's loss by its share
    for (int64_t b = micro; b < last; ++b) {
        const int64_t start = b * project_.data.batch_size;
        group_samples += std::min<int64_t>(project_.data.batch_size, examples_per_epoch_ - start);
    }
    for (auto& callback : callbacks_)
        callback->before_step(*this);
    double group_loss = 0;
    for (; micro < last; ++micro) {
        auto batch = train_loader_->next();
        if (!batch) return micro;
        forward_backward(on_device(*batch), group_samples, group_loss);
    }
    // Loss scaling: the gradients are unscaled once the data-parallel average is in (every
    // rank then sees the same overflow) and before any other callback reads them.
    for (auto& callback : callbacks_) {
        if (callback != data_parallel_) unscale_gradients();
        callback->after_backward(*this);
    }

    StepMetrics metrics{epoch_, step_ + 1, 0.0, 0.0, 0.0, {}, std::nullopt, false};
    const double lr = optimizer_->param_groups()[0].options.at("lr");
    clip_and_step(metrics); // a step with an overflowed gradient is skipped, and still counts
    ++step_;
    if (schedule_ && schedules_per_step(spec_)) schedule_->step();
    tracker_->step_done(group_samples);
    result_.train_samples += group_samples;
    metrics.loss = group_loss / double(group_samples);
    metrics.lr = lr;
    metrics.samples_per_second = tracker_->samples_per_second();
    for (auto& callback : callbacks_)
        callback->after_optimizer_step(*this, metrics);
    report(std::move(metrics));
    {
        std::lock_guard lock(progress_mutex_);
        progress_.epoch = epoch_;
        progress_.step_in_epoch = optimizer_steps(micro, spec_.accumulation_steps);
        progress_.step = step_;
        progress_.samples_per_second = tracker_->samples_per_second();
        progress_.eta_seconds = tracker_->eta_seconds();
        report(progress_);
    }
    for (auto& callback : callbacks_)
        callback->after_step_reported(*this);
    if (options_.max_steps > 0 && step_ >= options_.max_steps) control_->stop();
    return micro;
}

void Trainer::forward_backward(const data::Example& batch, int64_t group_samples,
                               double& group_loss) {
    const int64_t n = batch.input.size(0);
    Tensor out, loss;
    {
        AutocastGuard amp(autocast_dtype());
        out = (*model_)(batch.input);
        loss = (*loss_)(out, batch.target);
    }
    // Off the host the loss is copied behind the forward pass and read once the backward is
    // queued: the device runs the backward while the host waits for the value.
    const PendingItem loss_read(loss);
    const ForwardPass pass{batch, out, loss, loss_read};
    for (auto& callback : callbacks_)
        callback->after_forward(*this, pass);
    const double weight = sum_reduction_ ? 1.0 : double(n) / double(group_samples);
    const Tensor weighted = weight == 1.0 ? loss : loss * weight;
    (scaler_ ? scaler_->scale(weighted) : weighted).backward();
    if (epoch_classification_ && out.dim() == 2) {
        autograd::NoGradGuard no_grad;
        epoch_classification_->update(out.detach(), batch.target);
    }
    for (auto& callback : callbacks_)
        callback->after_loss(*this, pass);
    const double loss_value = pass.loss_value();
    const double mean_loss = sum_reduction_ ? loss_value / double(n) : loss_value;
    group_loss += mean_loss * double(n);
    epoch_loss_.add(mean_loss, n);
}

bool Trainer::end_epoch() {
    if (data_parallel_) data_parallel_->reduce_epoch(epoch_loss_, epoch_classification_);
    MetricMap train_metrics{{"loss", epoch_loss_.mean()}};
    if (epoch_classification_)
        for (const auto& [k, v] : epoch_classification_->scalars())
            train_metrics[k] = v;
    EpochMetrics metrics{epoch_, step_, train_metrics, {}, {}};
    if (data_.validation) metrics.validation = evaluate(data_.validation, &metrics.confusion);
    result_.train = metrics.train;
    result_.validation = metrics.validation;
    metrics_step_ = step_;
    result_.epochs_completed = epoch_ + 1;
    if (schedule_ && !schedules_per_step(spec_)) {
        if (schedule_->needs_metric())
            schedule_->step(metric_value(spec_.plateau_metric, metrics.train, metrics.validation));
        else
            schedule_->step();
    }
    report(metrics);
    EpochEnd end{metrics, epoch_ + 1 == spec_.epochs, false, false, {}};
    for (auto& callback : callbacks_)
        callback->on_epoch_end(*this, end);
    tracker_->restart_step_timer();
    if (end.stop) {
        result_.early_stopped = true;
        report(LogMessage{LogLevel::Info, end.stop_reason});
        return true;
    }
    if (control_->stop_requested()) {
        result_.status = RunStatus::Stopped;
        return true;
    }
    return false;
}

void Trainer::stop_mid_epoch(int64_t micro) {
    // Stopped between steps: keep the exact position for a resume.
    const auto path =
        save_checkpoint("step-" + zero_padded(step_, 7) + ".safetensors", epoch_, micro);
    if (!path.empty()) {
        result_.last_checkpoint = path;
        report(CheckpointSaved{path.string(), epoch_, step_, false});
    }
    result_.status = RunStatus::Stopped;
}

void Trainer::test_metrics() {
    result_.test = evaluate(data_.test);
    std::string text = "test:";
    for (const auto& [k, v] : result_.test) {
        char value[32];
        std::snprintf(value, sizeof value, "%.4f", v);
        text += " " + k + "=" + value;
    }
    report(LogMessage{LogLevel::Info, text});
}

} // namespace myelin::train
