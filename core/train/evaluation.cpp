// One evaluation pass that keeps every example's output, loss and prediction (evaluation.h).
// Its loss and metrics are computed exactly as Trainer::evaluate computes them (same loader
// options, same accumulators, same order), so the two agree to the bit.
#include <myelin/autocast.h>
#include <myelin/autograd.h>
#include <myelin/data/dataloader.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/io/checkpoint.h>
#include <myelin/nn/loss.h>
#include <myelin/spec/components.h>
#include <myelin/train/components.h>
#include <myelin/train/evaluation.h>

#include <myelin/quant/quantized_model.h>
#include <myelin/train/trainer.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

namespace myelin::train {

namespace {

// Trainer::evaluate's loader: the project's batches in dataset order, eval transforms.
data::DataLoaderOptions eval_loader_options(const Trainer& trainer) {
    const spec::DataSpec& d = trainer.project().data;
    data::DataLoaderOptions o;
    o.batch_size = d.batch_size;
    o.num_workers = d.num_workers;
    o.seed = trainer.spec().seed;
    o.transform = trainer.data().eval_transform;
    return o;
}

// The project's loss with reduction "none" when its kind offers that (the built-in ones but
// KLDivLoss): one call then gives every example's loss. Null otherwise.
std::shared_ptr<nn::Loss> per_example_loss(const spec::Choice& loss,
                                           const spec::LossContext& context) {
    spec::Choice none = loss;
    none.options.set("reduction", std::string("none"));
    try {
        return make_loss(none, context);
    } catch (const Error&) {
        return nullptr; // no "reduction" option, or "none" is not one of its values
    }
}

// Whether the project's loss sums over the batch (Trainer::evaluate divides it by the batch).
bool sums_over_batch(const spec::Choice& loss) {
    const spec::LossKind& kind = spec::kind_of(spec::loss_kinds(), loss, "loss");
    graph::Attrs o = graph::with_defaults(kind.options, loss.options);
    return o.contains("reduction") && o.get_string("reduction") == "sum";
}

// Rows of a [n, D] tensor as host values of type T.
template <typename T> std::vector<T> host_values(const Tensor& t, DType dtype) {
    const Tensor c = t.to(dtype).contiguous();
    const T* p = c.data<T>();
    return std::vector<T>(p, p + c.numel());
}

// ClassificationMetrics' argmax: the first largest value, NaN counting as the largest.
template <typename T> int64_t argmax_row(const T* row, int64_t n) {
    int64_t best = 0;
    for (int64_t c = 0; c < n; ++c) {
        if (std::isnan(row[c])) return c;
        if (row[c] > row[best]) best = c;
    }
    return best;
}

void append_predictions(const Tensor& out, int64_t n, int64_t classes,
                        std::vector<int64_t>& predicted) {
    if (out.dtype() == DType::Float64) {
        const auto v = host_values<double>(out, DType::Float64);
        for (int64_t i = 0; i < n; ++i)
            predicted.push_back(argmax_row(v.data() + i * classes, classes));
    } else {
        const auto v = host_values<float>(out, DType::Float32);
        for (int64_t i = 0; i < n; ++i)
            predicted.push_back(argmax_row(v.data() + i * classes, classes));
    }
}

// Each example's loss: the "none" reduction's values averaged per example, or (a loss without
// one) the loss of the example alone.
void append_losses(const Tensor& out, const Tensor& target, const nn::Loss* none,
                   const nn::Loss& loss, std::vector<double>& losses) {
    const int64_t n = out.size(0);
    if (none) {
        const Tensor l = (*none)(out, target);
        const auto v = host_values<double>(l.reshape({n, -1}), DType::Float64);
        const int64_t per = n > 0 ? int64_t(v.size()) / n : 0;
        for (int64_t i = 0; i < n; ++i) {
            double sum = 0;
            for (int64_t k = 0; k < per; ++k)
                sum += v[size_t(i * per + k)];
            losses.push_back(per > 0 ? sum / double(per) : 0.0);
        }
        return;
    }
    for (int64_t i = 0; i < n; ++i) {
        // One example: its mean and its sum are the same.
        losses.push_back(loss(out.narrow(0, i, 1), target.narrow(0, i, 1)).item<double>());
    }
}

void finish_classification(Evaluation& e) {
    const int64_t classes = e.num_classes();
    e.cell_examples.assign(size_t(classes * classes), {});
    for (int64_t i = 0; i < e.size; ++i)
        e.cell_examples[size_t(e.targets[size_t(i)] * classes + e.predicted[size_t(i)])].push_back(
            i);
    for (int64_t c = 0; c < classes; ++c)
        e.per_class.push_back(class_scores(e.confusion, c));
    // Softmax of the output: the probabilities for CrossEntropyLoss's logits, and for NLLLoss's
    // log-probabilities too (softmax(log p) = p when p sums to 1).
    e.probabilities.resize(e.outputs.size());
    for (int64_t i = 0; i < e.size; ++i) {
        const float* row = e.outputs.data() + i * classes;
        float* p = e.probabilities.data() + i * classes;
        const float top = *std::max_element(row, row + classes);
        double sum = 0;
        for (int64_t c = 0; c < classes; ++c)
            sum += std::exp(double(row[c]) - double(top));
        for (int64_t c = 0; c < classes; ++c)
            p[c] = float(std::exp(double(row[c]) - double(top)) / sum);
    }
}

} // namespace

std::vector<double> Evaluation::normalized_row(int64_t true_class) const {
    const int64_t n = confusion.num_classes;
    std::vector<double> row(size_t(n), 0.0);
    int64_t total = 0;
    for (int64_t c = 0; c < n; ++c)
        total += confusion.at(true_class, c);
    if (total > 0)
        for (int64_t c = 0; c < n; ++c)
            row[size_t(c)] = double(confusion.at(true_class, c)) / double(total);
    return row;
}

data::DatasetPtr evaluation_dataset(const Trainer& trainer, std::string* split) {
    const DataSplits& d = trainer.data();
    if (!d.test && !d.validation)
        throw Error("the project's data has neither a test nor a validation part "
                    "(set the source's test_fraction or the validation fraction)");
    if (split) *split = d.test ? "test" : "validation";
    return d.test ? d.test : d.validation;
}

std::unique_ptr<Trainer> trainer_for_checkpoint(const io::Project& project,
                                                const std::filesystem::path& project_dir,
                                                const std::filesystem::path& checkpoint,
                                                int threads) {
    if (checkpoint.empty()) throw Error("no checkpoint chosen");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(checkpoint, ec))
        throw Error(checkpoint.string() + ": no such checkpoint file");
    TrainerOptions options;
    options.project_dir = project_dir.empty() ? std::filesystem::path(".") : project_dir;
    options.threads = threads;
    // The Trainer seeds the default generator: give it back as it was, so an evaluation
    // between two trainings changes neither.
    const std::string generator = default_generator().get_state();
    struct Restore {
        const std::string& state;
        ~Restore() { default_generator().set_state(state); }
    } restore{generator};
    const io::Checkpoint saved = io::load_checkpoint(checkpoint);
    // A text model reads its examples through the vocabulary it was trained with.
    options.text_encoding = saved.description.text_encoding;
    auto trainer = std::make_unique<Trainer>(project, options);
    if (!saved.quantization.empty()) {
        // An int8 checkpoint: its layers become int8 modules made from the stored values.
        quant::load_quantized(
            trainer->model(),
            quant::QuantizationPlan::from_json(saved.quantization, checkpoint.string()),
            saved.model, checkpoint.string(), &project.model);
        return trainer;
    }
    // Only the model's tensors: an evaluation needs no optimizer state, so a checkpoint whose
    // optimizer no longer fits the project (other frozen layers, another optimizer) still
    // evaluates. The message is the one a resume gives.
    const nn::LoadStateDictResult r = trainer->model().load_state_dict(saved.model, false);
    if (!r.ok())
        throw Error(checkpoint.string() + ": the checkpoint does not fit this model:" + r.text());
    return trainer;
}

Evaluation evaluate_examples(Trainer& trainer, const data::DatasetPtr& dataset,
                             const EvaluationOptions& options) {
    const DataSplits& splits = trainer.data();
    Evaluation e;
    e.split = dataset == splits.test ? "test" : dataset == splits.validation ? "validation" : "";
    e.size = dataset->size();
    const bool classification = splits.classification();
    if (classification) e.class_names = splits.class_names;

    const spec::Choice& loss_choice = trainer.spec().loss;
    const std::shared_ptr<nn::Loss> loss = make_loss(loss_choice, trainer.loss_context());
    const std::shared_ptr<nn::Loss> none = per_example_loss(loss_choice, trainer.loss_context());
    const bool sum_reduction = sums_over_batch(loss_choice);

    data::DataLoader loader(dataset, eval_loader_options(trainer));
    graph::GraphModule& model = trainer.model();
    const bool was_training = model.is_training();
    model.eval();
    struct RestoreMode {
        graph::GraphModule& model;
        bool training;
        ~RestoreMode() { model.train(training); }
    } restore{model, was_training};
    autograd::NoGradGuard no_grad;
    AutocastGuard amp(trainer.autocast_dtype());

    RunningMean mean_loss;
    std::optional<ClassificationMetrics> cls;
    std::optional<RegressionMetrics> reg;
    if (classification)
        cls.emplace(e.num_classes(), e.class_names);
    else
        reg.emplace();
    std::vector<std::pair<const spec::MetricKind*, std::unique_ptr<spec::MetricAccumulator>>> extra;
    for (const spec::MetricKind& kind : spec::metric_kinds())
        if (kind.fits(classification)) extra.emplace_back(&kind, kind.build());

    e.outputs.reserve(size_t(e.size) * (classification ? size_t(e.num_classes()) : 1));
    e.losses.reserve(size_t(e.size));
    const int64_t batches = loader.size();
    int64_t done = 0;
    loader.start_epoch(0);
    while (true) {
        if (options.cancelled && options.cancelled()) {
            e.cancelled = true;
            return e;
        }
        auto batch = loader.next();
        if (!batch) break;
        const Tensor out = model(batch->input);
        const int64_t n = batch->input.size(0);
        const double l = (*loss)(out, batch->target).item<double>();
        mean_loss.add(sum_reduction ? l / double(n) : l, n);
        if (cls && out.dim() == 2) cls->update(out, batch->target);
        if (reg) reg->update(out, batch->target);
        for (auto& [kind, metric] : extra)
            metric->update(out, batch->target);

        const Tensor rows = out.reshape({n, -1});
        e.outputs_per_example = rows.size(1);
        const auto values = host_values<float>(rows, DType::Float32);
        e.outputs.insert(e.outputs.end(), values.begin(), values.end());
        append_losses(out, batch->target, none.get(), *loss, e.losses);
        if (classification) {
            append_predictions(rows, n, rows.size(1), e.predicted);
            const auto t = host_values<int64_t>(batch->target.reshape({n}), DType::Int64);
            e.targets.insert(e.targets.end(), t.begin(), t.end());
        } else {
            const auto t = host_values<float>(batch->target.reshape({n, -1}), DType::Float32);
            e.target_values.insert(e.target_values.end(), t.begin(), t.end());
        }
        ++done;
        if (options.progress) options.progress(done, batches);
    }

    e.metrics["loss"] = mean_loss.mean();
    if (cls) {
        for (const auto& [k, v] : cls->scalars())
            e.metrics[k] = v;
        e.confusion = cls->confusion_matrix();
        finish_classification(e);
    }
    if (reg)
        for (const auto& [k, v] : reg->scalars())
            e.metrics[k] = v;
    for (const auto& [kind, metric] : extra)
        e.metrics[kind->name] = metric->value();

    std::vector<int64_t> order(size_t(e.size));
    std::iota(order.begin(), order.end(), int64_t(0));
    const size_t k = size_t(std::clamp<int64_t>(options.top_losses, 0, e.size));
    // NaN losses first: they are the worst.
    const auto worse = [&](int64_t a, int64_t b) {
        const double la = e.losses[size_t(a)], lb = e.losses[size_t(b)];
        if (std::isnan(la) != std::isnan(lb)) return std::isnan(la);
        if (la != lb && !std::isnan(la)) return la > lb;
        return a < b;
    };
    std::partial_sort(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(), worse);
    e.top_losses.assign(order.begin(), order.begin() + std::ptrdiff_t(k));
    return e;
}

} // namespace myelin::train
