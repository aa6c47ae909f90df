// The training loop. One optimizer step = `accumulation_steps` micro-batches (the loader's
// batches), each loss weighted by its share of the group's samples so that accumulating equals
// training on the big batch. Capture hooks are registered only on the steps that capture, so a
// step without capture pays nothing for them.
#include <myelin/autocast.h>
#include <myelin/autograd.h>
#include <myelin/data/dataloader.h>
#include <myelin/device.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/graph/analysis.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/safetensors.h>
#include <myelin/nn/loss.h>
#include <myelin/optim/clip_grad.h>
#include <myelin/optim/optimizer.h>
#include <myelin/train/capture.h>
#include <myelin/train/components.h>
#include <myelin/train/early_stopping.h>
#include <myelin/train/metrics.h>
#include <myelin/train/trainer.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace myelin::train {

namespace {

// training.precision "bfloat16" runs every forward pass (training, evaluation, probes) under
// bf16 autocast, so evaluation measures the model as it trains; backward and the optimizer
// step stay outside it.
std::optional<DType> autocast_for(const io::TrainSpec& spec) {
    if (spec.precision == "bfloat16") return DType::BFloat16;
    return std::nullopt;
}

std::string zero_padded(int64_t value, int width) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%0*lld", width, static_cast<long long>(value));
    return buffer;
}

data::DataLoaderOptions loader_options(const io::DataSpec& d, uint64_t seed, bool train,
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

Trainer::Trainer(const io::Project& project, TrainerOptions options)
    : project_(project), spec_(project.train), options_(std::move(options)) {
    if (options_.epochs) spec_.epochs = *options_.epochs;
    if (options_.seed) spec_.seed = *options_.seed;
    if (options_.threads > 0) spec_.threads = options_.threads;
    if (spec_.epochs < 1) throw Error("epochs must be at least 1");
    if (spec_.threads > 0) set_num_threads(spec_.threads);

    // The model is initialised from the seed, as torch.manual_seed(seed) before building it.
    manual_seed(spec_.seed);
    model_ = graph::build(project.model);
    if (model_->input_nodes().size() != 1)
        throw Error("the model has " + std::to_string(model_->input_nodes().size()) +
                    " Input nodes; training needs exactly one (the data's input)");
    data_ = make_data(project.data, options_.project_dir, spec_.seed);
    loss_ = make_loss(spec_.loss);
    {
        const ComponentKind* k = find_component(loss_kinds(), spec_.loss.kind);
        graph::Attrs o = graph::with_defaults(k->options, spec_.loss.options);
        sum_reduction_ = o.get_string("reduction") == "sum";
    }
    check_data_fits_model();

    // Parameter groups: one per distinct lr multiplier (frozen layers are left out, as
    // filter(lambda p: p.requires_grad, ...) in PyTorch).
    std::map<double, size_t> group_of;
    std::vector<optim::ParamGroup> groups;
    const ComponentKind* ok = find_component(optimizer_kinds(), spec_.optimizer.kind);
    double base_lr = graph::with_defaults(ok->options, spec_.optimizer.options).get_float("lr");
    for (const auto& node : project.model.nodes) {
        const std::string& name = model_->module_name(node.id);
        if (name.empty() || node.frozen) continue;
        auto params = model_->child(name)->parameters();
        if (params.empty()) continue;
        auto [it, fresh] = group_of.emplace(node.lr_multiplier, groups.size());
        if (fresh) {
            groups.emplace_back();
            if (node.lr_multiplier != 1.0)
                groups.back().options["lr"] = base_lr * node.lr_multiplier;
        }
        for (auto& p : params)
            groups[it->second].params.push_back(p);
    }
    if (groups.empty()) throw Error("the model has no trainable parameters (all frozen?)");
    optimizer_ = make_optimizer(spec_.optimizer, std::move(groups));

    train_loader_ = std::make_unique<data::DataLoader>(
        data_.train, loader_options(project.data, spec_.seed, true, data_.train_transform));
    micro_batches_per_epoch_ = train_loader_->size();
    if (micro_batches_per_epoch_ == 0)
        throw Error("the training split has fewer examples (" +
                    std::to_string(data_.train->size()) + ") than one batch (" +
                    std::to_string(project.data.batch_size) + ") with drop_last");
    steps_per_epoch_ = optimizer_steps(micro_batches_per_epoch_, spec_.accumulation_steps);
    if (spec_.scheduler) {
        schedule_ = std::make_unique<Schedule>(*spec_.scheduler, *optimizer_,
                                               schedule_steps(spec_, steps_per_epoch_));
    }
    const auto& es = spec_.early_stopping;
    early_stopping_ = std::make_unique<EarlyStopping>(es.metric, parse_metric_mode(es.mode),
                                                      int(es.patience), es.min_delta);
    for (const auto& [name, child] : model_->named_children())
        if (spec_.capture.layers.empty() ||
            std::count(spec_.capture.layers.begin(), spec_.capture.layers.end(), name))
            layers_.emplace_back(name, child);
    if (!options_.init_weights.empty()) load_initial_weights();
    if (!options_.resume_from.empty()) load_resume_checkpoint();
    progress_.epochs = spec_.epochs;
    progress_.steps_per_epoch = steps_per_epoch_;
    progress_.total_steps = steps_per_epoch_ * spec_.epochs;
    progress_.step = step_;
    progress_.epoch = epoch_;
}

Trainer::~Trainer() = default;

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
    if (loss_takes_class_indices(loss)) {
        if (!data_.classification())
            throw Error(loss + " needs class labels, but the data's targets are numeric "
                               "(regression): choose MSELoss, L1Loss, SmoothL1Loss or HuberLoss");
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
    if (data_.classification() && (loss == "BCEWithLogitsLoss" || loss == "BCELoss"))
        throw Error(loss + " needs float targets of the output's shape; this data has class "
                           "indices: use CrossEntropyLoss");
    if (!(s == target))
        throw Error("the model's output " + graph::to_string(*out) +
                    " does not match the targets " + target.str() + " for " + loss +
                    (s.size() == 2 && s[1] == 1 && target.size() == 1
                         ? " (add a Flatten with start_dim 0 before the Output)"
                         : ""));
}

void Trainer::report(Event event) {
    if (sink_) sink_->on_event(event);
}

void Trainer::pause() {
    paused_ = true;
}

void Trainer::resume() {
    {
        std::lock_guard lock(pause_mutex_);
        paused_ = false;
    }
    pause_cv_.notify_all();
}

void Trainer::stop() {
    {
        std::lock_guard lock(pause_mutex_);
        stop_ = true;
    }
    pause_cv_.notify_all();
}

void Trainer::wait_while_paused() {
    if (!paused_) return;
    report(LogMessage{LogLevel::Info, "paused at step " + std::to_string(step_)});
    std::unique_lock lock(pause_mutex_);
    pause_cv_.wait(lock, [&] { return !paused_ || stop_; });
    if (!stop_) report(LogMessage{LogLevel::Info, "resumed"});
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
    data::DataLoader loader(dataset,
                            loader_options(project_.data, spec_.seed, false, data_.eval_transform));
    bool was_training = model_->is_training();
    model_->eval();
    autograd::NoGradGuard no_grad;
    AutocastGuard amp(autocast_for(spec_));
    RunningMean loss;
    std::optional<ClassificationMetrics> cls;
    std::optional<RegressionMetrics> reg;
    if (data_.classification())
        cls.emplace(int64_t(data_.class_names.size()), data_.class_names);
    else
        reg.emplace();
    loader.start_epoch(0);
    while (auto batch = loader.next()) {
        Tensor out = (*model_)(batch->input);
        int64_t n = batch->input.size(0);
        double l = (*loss_)(out, batch->target).item<double>();
        loss.add(sum_reduction_ ? l / double(n) : l, n);
        if (cls && out.dim() == 2) cls->update(out, batch->target);
        if (reg) reg->update(out, batch->target);
    }
    model_->train(was_training);
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
    return m;
}

Tensor Trainer::predict(const data::DatasetPtr& dataset, Tensor* targets) {
    data::DataLoader loader(dataset,
                            loader_options(project_.data, spec_.seed, false, data_.eval_transform));
    bool was_training = model_->is_training();
    model_->eval();
    autograd::NoGradGuard no_grad;
    AutocastGuard amp(autocast_for(spec_));
    TensorList outputs, target_list;
    loader.start_epoch(0);
    while (auto batch = loader.next()) {
        outputs.push_back((*model_)(batch->input));
        if (targets) target_list.push_back(batch->target);
    }
    model_->train(was_training);
    if (outputs.empty()) return Tensor();
    if (targets) *targets = cat(target_list, 0);
    return cat(outputs, 0);
}

std::optional<std::string> Trainer::first_nonfinite_output(const data::Example& batch) {
    autograd::NoGradGuard no_grad;
    AutocastGuard amp(autocast_for(spec_));
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

std::filesystem::path Trainer::save_checkpoint(const std::string& file_name, int64_t epoch,
                                               int64_t batch_in_epoch) {
    if (options_.checkpoint_dir.empty()) return {};
    std::filesystem::create_directories(options_.checkpoint_dir);
    io::Checkpoint c;
    c.model = model_->state_dict();
    c.optimizer_kind = optimizer_->name();
    c.optimizer = optimizer_->state_dict();
    if (schedule_) c.scheduler = schedule_->state_dict();
    c.position = {epoch, batch_in_epoch, step_};
    c.generator_state = default_generator().get_state();
    if (early_stopping_->has_best()) c.best_metric = early_stopping_->best();
    c.bad_epochs = early_stopping_->bad_epochs();
    c.early_stopping_updates = early_stopping_->updates();
    c.project_json = io::serialize_project(project_);
    auto path = options_.checkpoint_dir / file_name;
    io::save_checkpoint(path, c);
    return path;
}

void Trainer::load_initial_weights() {
    const std::string where = options_.init_weights.string();
    io::SafetensorsFile file = io::load_safetensors(options_.init_weights);
    nn::StateDict state;
    for (auto& [name, tensor] : file.tensors)
        if (name.rfind("optimizer.", 0) != 0) state.emplace_back(name, tensor);
    auto r = model_->load_state_dict(state, false);
    if (!r.shape_mismatches.empty()) {
        std::string what;
        for (const auto& m : r.shape_mismatches)
            what += "\n  " + m;
        throw Error(where + ": weights of the wrong shape for this model:" + what);
    }
    if (r.missing_keys.size() == model_->state_dict().size())
        throw Error(where +
                    ": none of its tensors matches a parameter or buffer of this model "
                    "(names like " +
                    (state.empty() ? std::string("-") : state[0].first) + ")");
    auto list = [](const std::vector<std::string>& keys) {
        std::string out;
        for (size_t i = 0; i < keys.size() && i < 8; ++i)
            out += (i ? ", " : "") + keys[i];
        return keys.size() > 8 ? out + ", ..." : out;
    };
    if (!r.missing_keys.empty())
        init_warnings_.push_back("initial weights: " + std::to_string(r.missing_keys.size()) +
                                 " tensor(s) not in " + where +
                                 " keep their initialisation: " + list(r.missing_keys));
    if (!r.unexpected_keys.empty())
        init_warnings_.push_back("initial weights: " + std::to_string(r.unexpected_keys.size()) +
                                 " tensor(s) of " + where +
                                 " are not in the model: " + list(r.unexpected_keys));
}

void Trainer::load_resume_checkpoint() {
    io::Checkpoint c = io::load_checkpoint(options_.resume_from);
    const std::string where = options_.resume_from.string();
    auto r = model_->load_state_dict(c.model, false);
    if (!r.ok()) {
        std::string what;
        for (const auto& k : r.missing_keys)
            what += "\n  missing: " + k;
        for (const auto& k : r.unexpected_keys)
            what += "\n  unexpected: " + k;
        for (const auto& k : r.shape_mismatches)
            what += "\n  shape: " + k;
        throw Error(where + ": the checkpoint does not fit this model:" + what);
    }
    if (c.optimizer_kind == optimizer_->name()) {
        try {
            optimizer_->load_state_dict(c.optimizer);
        } catch (const Error& e) {
            throw Error(where + ": optimizer state does not fit: " + e.what());
        }
    } else {
        report(LogMessage{LogLevel::Warning, "the checkpoint's optimizer is " + c.optimizer_kind +
                                                 ", the project's " + optimizer_->name() +
                                                 ": optimizer state starts fresh"});
    }
    if (schedule_ && c.scheduler) schedule_->load_state_dict(*c.scheduler);
    default_generator().set_state(c.generator_state);
    epoch_ = c.position.epoch;
    first_batch_ = c.position.batch_in_epoch;
    step_ = c.position.step;
    if (first_batch_ >= micro_batches_per_epoch_) {
        ++epoch_;
        first_batch_ = 0;
    }
    if (c.best_metric) {
        EarlyStoppingState s = early_stopping_->state();
        s.best = *c.best_metric;
        s.bad_epochs = int(c.bad_epochs);
        s.updates = c.early_stopping_updates;
        early_stopping_->restore(s);
        best_metric_ = c.best_metric;
    }
}

TrainResult Trainer::run() {
    if (spec_.threads > 0) set_num_threads(spec_.threads); // this thread's OpenMP team
    result_ = TrainResult();
    ProgressTracker tracker(steps_per_epoch_ * spec_.epochs);
    report(RunStarted{options_.run_name, spec_.epochs, steps_per_epoch_, epoch_, step_});
    for (const auto& w : init_warnings_)
        report(LogMessage{LogLevel::Warning, w});
    tracker.start(step_);
    const int64_t accumulation = spec_.accumulation_steps;
    const auto& cap = spec_.capture;
    // A fixed example for feature maps: the first of validation (else training), eval transform.
    Tensor probe;
    if (cap.feature_maps_every > 0) {
        auto source = data_.validation ? data_.validation : data_.train;
        Generator gen(spec_.seed);
        Tensor x = source->get(0).input;
        if (data_.eval_transform) x = (*data_.eval_transform)(x, gen);
        probe = x.unsqueeze(0);
    }
    std::vector<Tensor> all_params = model_->parameters();
    try {
        for (; epoch_ < spec_.epochs; ++epoch_) {
            model_->train();
            train_loader_->start_epoch(uint64_t(epoch_), first_batch_);
            RunningMean epoch_loss;
            std::optional<ClassificationMetrics> train_cls;
            if (data_.classification())
                train_cls.emplace(int64_t(data_.class_names.size()), data_.class_names);
            int64_t micro = first_batch_;
            first_batch_ = 0;
            // The samples of the current accumulation group, to weight each micro-batch.
            int64_t group_samples = 0;
            double group_loss = 0;
            std::vector<HookHandle> hooks;
            bool capturing_summaries = false;
            while (true) {
                if (micro % accumulation == 0) {
                    // Group boundary: pause / stop are honoured here, between optimizer steps.
                    if (stop_) break;
                    wait_while_paused();
                    if (stop_) break;
                    tracker.restart_step_timer();
                    optimizer_->zero_grad();
                    int64_t first = micro,
                            last = std::min(micro + accumulation, micro_batches_per_epoch_);
                    group_samples = 0;
                    for (int64_t b = first; b < last; ++b) {
                        int64_t start = b * project_.data.batch_size;
                        group_samples += std::min<int64_t>(project_.data.batch_size,
                                                           data_.train->size() - start);
                    }
                    group_loss = 0;
                    capturing_summaries =
                        cap.summaries_every > 0 && (step_ + 1) % cap.summaries_every == 0;
                    if (capturing_summaries)
                        for (const auto& [name, layer] : layers_) {
                            hooks.push_back(layer->register_forward_hook(
                                [this, name = name](nn::Module&, const TensorList&,
                                                    const Tensor& out) {
                                    if (out.defined() && is_floating(out.dtype()))
                                        report(TensorSummaryEvent{name, SummaryKind::Activation,
                                                                  epoch_, step_ + 1,
                                                                  summarize(out.detach())});
                                    return Tensor();
                                }));
                            hooks.push_back(layer->register_full_backward_hook(
                                [this, name = name](nn::Module&, const TensorList&,
                                                    const TensorList& grad_out) {
                                    if (!grad_out.empty() && grad_out[0].defined())
                                        report(TensorSummaryEvent{name, SummaryKind::Gradient,
                                                                  epoch_, step_ + 1,
                                                                  summarize(grad_out[0])});
                                }));
                        }
                }
                auto batch = train_loader_->next();
                if (!batch) break;
                const int64_t n = batch->input.size(0);
                Tensor out, loss;
                {
                    AutocastGuard amp(autocast_for(spec_));
                    out = (*model_)(batch->input);
                    loss = (*loss_)(out, batch->target);
                }
                double loss_value = loss.item<double>();
                if (!std::isfinite(loss_value)) {
                    for (auto& h : hooks)
                        h.remove();
                    auto where = first_nonfinite_output(*batch);
                    result_.error_module = where;
                    throw Error("the loss became " +
                                std::string(std::isnan(loss_value) ? "NaN" : "infinite") +
                                " at step " + std::to_string(step_ + 1) + " (epoch " +
                                std::to_string(epoch_ + 1) + ")" +
                                (where ? "; the first non-finite output is " + *where + "'s"
                                       : "; every layer's output was finite, so the loss itself "
                                         "overflowed"));
                }
                double weight = sum_reduction_ ? 1.0 : double(n) / double(group_samples);
                (weight == 1.0 ? loss : loss * weight).backward();
                group_loss += (sum_reduction_ ? loss_value / double(n) : loss_value) * double(n);
                epoch_loss.add(sum_reduction_ ? loss_value / double(n) : loss_value, n);
                if (train_cls && out.dim() == 2) {
                    autograd::NoGradGuard no_grad;
                    train_cls->update(out.detach(), batch->target);
                }
                ++micro;
                if (micro % accumulation != 0 && micro < micro_batches_per_epoch_) continue;

                // --- optimizer step ---
                for (auto& h : hooks)
                    h.remove();
                hooks.clear();
                const bool norms = cap.layer_norms && (step_ + 1) % cap.layer_norms_every == 0;
                std::vector<LayerStats> stats;
                std::vector<std::vector<Tensor>> before;
                double grad_squares = 0;
                std::optional<std::string> bad_grad_layer;
                for (const auto& [name, layer] : layers_) {
                    auto params = layer->parameters();
                    if (params.empty()) continue;
                    double g2 = 0, w2 = 0;
                    for (const auto& p : params) {
                        if (p.grad().defined()) g2 += sum_of_squares(p.grad());
                        if (norms) w2 += sum_of_squares(p);
                    }
                    if (!std::isfinite(g2)) bad_grad_layer = name; // last in forward order wins
                    grad_squares += g2;
                    if (norms) {
                        stats.push_back({name, std::sqrt(g2), std::sqrt(w2), 0.0});
                        std::vector<Tensor> copies;
                        for (const auto& p : params)
                            copies.push_back(p.detach().clone());
                        before.push_back(std::move(copies));
                    }
                }
                if (!std::isfinite(grad_squares)) {
                    result_.error_module = bad_grad_layer;
                    throw Error("a gradient became non-finite at step " +
                                std::to_string(step_ + 1) +
                                (bad_grad_layer ? " in " + *bad_grad_layer : std::string()) +
                                " (try a lower learning rate or gradient clipping)");
                }
                if (spec_.clip_grad_norm) optim::clip_grad_norm_(all_params, *spec_.clip_grad_norm);
                if (spec_.clip_grad_value)
                    optim::clip_grad_value_(all_params, *spec_.clip_grad_value);
                optimizer_->step();
                ++step_;
                if (norms) {
                    size_t i = 0;
                    for (const auto& [name, layer] : layers_) {
                        auto params = layer->parameters();
                        if (params.empty()) continue;
                        UpdateSquares u;
                        for (size_t j = 0; j < params.size(); ++j)
                            u += update_squares(before[i][j], params[j]);
                        stats[i].update_ratio = u.ratio();
                        ++i;
                    }
                }
                const double lr = optimizer_->param_groups()[0].options.at("lr");
                if (schedule_ && schedules_per_step(spec_)) schedule_->step();
                tracker.step_done(group_samples);
                StepMetrics sm{epoch_,
                               step_,
                               group_loss / double(group_samples),
                               lr,
                               tracker.samples_per_second(),
                               std::move(stats)};
                report(std::move(sm));
                if (capturing_summaries)
                    for (const auto& [name, layer] : layers_)
                        for (const auto& [pname, p] : layer->named_parameters())
                            report(TensorSummaryEvent{name + "." + pname, SummaryKind::Weight,
                                                      epoch_, step_, summarize(p.detach())});
                if (cap.feature_maps_every > 0 && step_ % cap.feature_maps_every == 0 &&
                    probe.defined()) {
                    autograd::NoGradGuard no_grad;
                    AutocastGuard amp(autocast_for(spec_));
                    bool was_training = model_->is_training();
                    model_->eval();
                    std::vector<HookHandle> fm;
                    for (const auto& [name, layer] : layers_)
                        fm.push_back(layer->register_forward_hook(
                            [this, name = name](nn::Module&, const TensorList&, const Tensor& o) {
                                report(FeatureMapEvent{name, epoch_, step_, snapshot(o)});
                                return Tensor();
                            }));
                    (*model_)(probe);
                    for (auto& h : fm)
                        h.remove();
                    model_->train(was_training);
                }
                {
                    std::lock_guard lock(progress_mutex_);
                    progress_.epoch = epoch_;
                    progress_.step_in_epoch = optimizer_steps(micro, accumulation);
                    progress_.step = step_;
                    progress_.samples_per_second = tracker.samples_per_second();
                    progress_.eta_seconds = tracker.eta_seconds();
                    report(progress_);
                }
                if (options_.max_steps > 0 && step_ >= options_.max_steps) stop_ = true;
                if (spec_.validate_every_steps > 0 && step_ % spec_.validate_every_steps == 0 &&
                    data_.validation) {
                    EpochMetrics mid{epoch_,
                                     step_,
                                     {{"loss", epoch_loss.mean()}},
                                     evaluate(data_.validation),
                                     {}};
                    report(std::move(mid));
                    tracker.restart_step_timer();
                }
            }
            for (auto& h : hooks)
                h.remove();
            const bool epoch_done = micro >= micro_batches_per_epoch_;
            if (!epoch_done) {
                // Stopped between steps: keep the exact position for a resume.
                auto path = save_checkpoint("step-" + zero_padded(step_, 7) + ".safetensors",
                                            epoch_, micro);
                if (!path.empty()) {
                    result_.last_checkpoint = path;
                    report(CheckpointSaved{path.string(), epoch_, step_, false});
                }
                result_.status = RunStatus::Stopped;
                break;
            }

            // --- end of epoch: validation, schedule, early stopping, checkpoints ---
            MetricMap train_metrics{{"loss", epoch_loss.mean()}};
            if (train_cls)
                for (const auto& [k, v] : train_cls->scalars())
                    train_metrics[k] = v;
            EpochMetrics em{epoch_, step_, train_metrics, {}, {}};
            if (data_.validation) em.validation = evaluate(data_.validation, &em.confusion);
            result_.train = em.train;
            result_.validation = em.validation;
            result_.epochs_completed = epoch_ + 1;
            if (schedule_ && !schedules_per_step(spec_)) {
                if (schedule_->needs_metric())
                    schedule_->step(metric_value(spec_.plateau_metric, em.train, em.validation));
                else
                    schedule_->step();
            }
            // The early-stopping metric also picks the best checkpoint; without validation data
            // a val_ metric does not exist: then only an enabled early stopping is an error.
            bool is_best = false;
            const std::string& tracked_name = spec_.early_stopping.metric;
            bool tracked_exists = tracked_name.rfind("val_", 0) != 0 || data_.validation;
            if (spec_.early_stopping.enabled || (spec_.checkpoints.keep_best && tracked_exists))
                is_best =
                    early_stopping_->update(metric_value(tracked_name, em.train, em.validation));
            report(std::move(em));
            const auto& ck = spec_.checkpoints;
            const bool last_epoch = epoch_ + 1 == spec_.epochs;
            if (is_best && ck.keep_best) {
                auto path = save_checkpoint("best.safetensors", epoch_ + 1, 0);
                if (!path.empty()) {
                    result_.best_checkpoint = path;
                    report(CheckpointSaved{path.string(), epoch_ + 1, step_, true});
                }
            }
            const bool stopping = spec_.early_stopping.enabled && early_stopping_->should_stop();
            if ((ck.every_epochs > 0 && (epoch_ + 1) % ck.every_epochs == 0) || last_epoch ||
                stopping) {
                auto path = save_checkpoint("epoch-" + zero_padded(epoch_ + 1, 4) + ".safetensors",
                                            epoch_ + 1, 0);
                if (!path.empty()) {
                    result_.last_checkpoint = path;
                    report(CheckpointSaved{path.string(), epoch_ + 1, step_, false});
                    periodic_checkpoints_.push_back(path);
                    while (int64_t(periodic_checkpoints_.size()) > ck.keep_last) {
                        std::error_code ignored;
                        std::filesystem::remove(periodic_checkpoints_.front(), ignored);
                        periodic_checkpoints_.erase(periodic_checkpoints_.begin());
                    }
                }
            }
            tracker.restart_step_timer();
            if (stopping) {
                result_.early_stopped = true;
                report(LogMessage{LogLevel::Info, early_stopping_->stop_reason()});
                ++epoch_;
                break;
            }
            if (stop_) {
                result_.status = RunStatus::Stopped;
                ++epoch_;
                break;
            }
        }
        if (result_.status == RunStatus::Finished && data_.test) {
            result_.test = evaluate(data_.test);
            std::string text = "test:";
            for (const auto& [k, v] : result_.test) {
                char value[32];
                std::snprintf(value, sizeof value, "%.4f", v);
                text += " " + k + "=" + value;
            }
            report(LogMessage{LogLevel::Info, text});
        }
    } catch (const std::exception& e) {
        result_.status = RunStatus::Failed;
        result_.error = e.what();
        report(RunError{result_.error, epoch_, step_, result_.error_module});
    }
    result_.steps = step_;
    report(Finished{result_.status, epoch_, step_});
    return result_;
}

} // namespace myelin::train
