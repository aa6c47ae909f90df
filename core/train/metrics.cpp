// Streaming classification and regression metrics. Each update makes one pass over the batch
// with raw pointers (after moving it to host memory and a contiguous layout), so validating
// 10k samples costs microseconds; classification logits off the host are scored on their device
// and counted when a result is read (ClassificationMetrics::settle).
#include <myelin/error.h>
#include <myelin/nn/loss.h>
#include <myelin/spec/components.h>
#include <myelin/tensor.h>
#include <myelin/train/metrics.h>

#include "backend/kernels/class_scores.h"

#include <algorithm>
#include <cmath>
#include <string>

// No a * b + c contracted into an FMA: the metrics come out the same in a -march=native build
// and a portable one.
#pragma GCC optimize("fp-contract=off")

namespace myelin::train {

namespace {

// Host, contiguous, detached (so no autograd node is recorded), in `dtype`.
Tensor host_contiguous(const Tensor& x, DType dtype) {
    return x.detach().to(kCPU).to(dtype).contiguous();
}

struct RowCounts {
    int64_t correct = 0;
    int64_t top5 = 0;
    // One scored row: its cell of the confusion matrix (`classes` wide), and whether the label
    // is the prediction and among the top 5 (fewer than 5 classes rank above it).
    void add(int64_t label, int64_t predicted, int64_t above_target, int64_t classes,
             int64_t* confusion) {
        ++confusion[label * classes + predicted];
        correct += predicted == label;
        top5 += above_target < 5;
    }
};

// Per row: the maximum and a NaN check, a short scan for the first index of the maximum, and the
// rank of the target, with no data-dependent branch inside the loops over classes (random logits
// make each such branch a coin toss). Rows with NaN take the general rule (kernels/class_scores.h).
template <typename T>
RowCounts score_rows(const T* logits, const int64_t* targets, int64_t rows, int64_t classes,
                     int64_t* confusion) {
    RowCounts counts;
    for (int64_t i = 0; i < rows; ++i) {
        const T* row = logits + i * classes;
        const int64_t label = targets[i];
        T best = row[0];
        bool has_nan = false;
        for (int64_t j = 0; j < classes; ++j) {
            best = row[j] > best ? row[j] : best;
            has_nan |= row[j] != row[j];
        }
        int64_t predicted = 0, above_target = 0;
        if (has_nan) {
            const kernels::RowScore score = kernels::score_row(row, classes, label);
            predicted = score.predicted;
            above_target = score.above_target;
        } else {
            while (row[predicted] != best)
                ++predicted;
            const T target_value = row[label];
            for (int64_t j = 0; j < classes; ++j)
                above_target += (row[j] > target_value) | ((j < label) & (row[j] == target_value));
        }
        counts.add(label, predicted, above_target, classes, confusion);
    }
    return counts;
}

double ratio(int64_t numerator, int64_t denominator) {
    return denominator > 0 ? static_cast<double>(numerator) / static_cast<double>(denominator)
                           : 0.0;
}

// Shapes equal once size-1 dimensions are ignored ([N, 1] and [N] hold the same values).
bool same_shape_ignoring_ones(const Dims& a, const Dims& b) {
    Dims sa, sb;
    for (int64_t d : a)
        if (d != 1) sa.push_back(d);
    for (int64_t d : b)
        if (d != 1) sb.push_back(d);
    return sa == sb;
}

struct BatchRegression {
    double abs_error = 0.0;
    double squared_error = 0.0;
    double target_mean = 0.0;
    double target_m2 = 0.0;
};

// Two passes: sums, then the squared deviations of the targets from their batch mean (the
// two-pass variance is exact where sum-of-squares minus square-of-sum cancels).
template <typename T> BatchRegression regression_batch(const T* pred, const T* target, int64_t n) {
    BatchRegression b;
    double target_sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const double p = static_cast<double>(pred[i]);
        const double t = static_cast<double>(target[i]);
        const double e = p - t;
        b.abs_error += std::abs(e);
        b.squared_error += e * e;
        target_sum += t;
    }
    b.target_mean = target_sum / static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) {
        const double d = static_cast<double>(target[i]) - b.target_mean;
        b.target_m2 += d * d;
    }
    return b;
}

} // namespace

// --- ClassificationMetrics ----------------------------------------------------------------------

ClassificationMetrics::ClassificationMetrics(int64_t num_classes,
                                             std::vector<std::string> class_names)
    : num_classes_(num_classes), class_names_(std::move(class_names)) {
    if (num_classes < 1)
        throw Error("ClassificationMetrics: the number of classes must be at least 1, got " +
                    std::to_string(num_classes));
    if (!class_names_.empty() && static_cast<int64_t>(class_names_.size()) != num_classes)
        throw Error("ClassificationMetrics: " + std::to_string(class_names_.size()) +
                    " class names given for " + std::to_string(num_classes) + " classes");
    confusion_.num_classes = num_classes;
    confusion_.class_names = class_names_;
    confusion_.counts.assign(static_cast<size_t>(num_classes * num_classes), 0);
}

void ClassificationMetrics::update(const Tensor& logits, const Tensor& targets) {
    if (!logits.defined() || !targets.defined())
        throw Error("ClassificationMetrics::update: logits and targets must be defined tensors");
    if (logits.dim() != 2 || logits.size(1) != num_classes_)
        throw ShapeError("ClassificationMetrics::update: logits must have shape [N, " +
                         std::to_string(num_classes_) + "], got " + logits.shape().str());
    if (targets.dim() != 1 || targets.size(0) != logits.size(0))
        throw ShapeError("ClassificationMetrics::update: targets must have shape [" +
                         std::to_string(logits.size(0)) + "] to match logits " +
                         logits.shape().str() + ", got " + targets.shape().str());
    if (!logits.is_floating_point())
        throw DTypeError("ClassificationMetrics::update: logits must be floating point, got " +
                         std::string(dtype_name(logits.dtype())));
    if (!is_integral(targets.dtype(), /*include_bool=*/false))
        throw DTypeError(
            "ClassificationMetrics::update: targets must be class indices (int64), got " +
            std::string(dtype_name(targets.dtype())));
    const int64_t rows = logits.size(0);
    if (rows == 0) return;

    if (!logits.device().is_cpu()) {
        const Tensor labels = targets.detach().to(logits.device()).to(DType::Int64);
        Tensor scores;
        try {
            scores = nn::functional::class_scores(logits, labels);
        } catch (const IndexError& e) { // a label outside [0, C): nothing counted
            throw Error(std::string("ClassificationMetrics::update: ") + e.what());
        }
        pending_.push_back(cat({labels.unsqueeze(1), scores}, 1));
        pending_rows_ += rows;
        if (pending_rows_ >= kMaxPendingRows) settle();
        return;
    }
    const Tensor labels = host_contiguous(targets, DType::Int64);
    const int64_t* label_data = labels.data<int64_t>();
    // Checked before counting anything, so a bad batch leaves the totals as they were.
    for (int64_t i = 0; i < rows; ++i)
        if (label_data[i] < 0 || label_data[i] >= num_classes_)
            throw Error("ClassificationMetrics::update: target " + std::to_string(i) +
                        " has class label " + std::to_string(label_data[i]) + ", outside [0, " +
                        std::to_string(num_classes_) + ") for " + std::to_string(num_classes_) +
                        " classes");

    RowCounts counts;
    if (logits.dtype() == DType::Float64) {
        const Tensor x = host_contiguous(logits, DType::Float64);
        counts =
            score_rows(x.data<double>(), label_data, rows, num_classes_, confusion_.counts.data());
    } else {
        const Tensor x = host_contiguous(logits, DType::Float32);
        counts =
            score_rows(x.data<float>(), label_data, rows, num_classes_, confusion_.counts.data());
    }
    count_ += rows;
    correct_ += counts.correct;
    top5_correct_ += counts.top5;
}

void ClassificationMetrics::settle() const {
    if (pending_.empty()) return;
    const Tensor rows = (pending_.size() == 1 ? pending_[0] : cat(pending_, 0)).to(kCPU);
    pending_.clear();
    pending_rows_ = 0;
    const int64_t* r = rows.contiguous().data<int64_t>(); // [label, predicted, above label]
    RowCounts counts;
    for (int64_t i = 0, n = rows.size(0); i < n; ++i, r += 3)
        counts.add(r[0], r[1], r[2], num_classes_, confusion_.counts.data());
    count_ += rows.size(0);
    correct_ += counts.correct;
    top5_correct_ += counts.top5;
}

void ClassificationMetrics::reset() {
    pending_.clear();
    pending_rows_ = 0;
    std::fill(confusion_.counts.begin(), confusion_.counts.end(), 0);
    count_ = correct_ = top5_correct_ = 0;
}

std::vector<int64_t> ClassificationMetrics::raw_counts() const {
    settle();
    std::vector<int64_t> out = confusion_.counts;
    out.insert(out.end(), {count_, correct_, top5_correct_});
    return out;
}

void ClassificationMetrics::set_raw_counts(const std::vector<int64_t>& counts) {
    if (counts.size() != confusion_.counts.size() + 3)
        throw Error("ClassificationMetrics: " + std::to_string(counts.size()) +
                    " counts given, expected " + std::to_string(confusion_.counts.size() + 3));
    pending_.clear();
    pending_rows_ = 0;
    std::copy(counts.begin(), counts.end() - 3, confusion_.counts.begin());
    count_ = counts[counts.size() - 3];
    correct_ = counts[counts.size() - 2];
    top5_correct_ = counts[counts.size() - 1];
}

double ClassificationMetrics::accuracy() const {
    settle();
    return ratio(correct_, count_);
}

double ClassificationMetrics::top5_accuracy() const {
    if (!has_top5())
        throw Error("ClassificationMetrics: top-5 accuracy needs at least 5 classes, there are " +
                    std::to_string(num_classes_));
    settle();
    return ratio(top5_correct_, count_);
}

ClassScores class_scores(const ConfusionMatrix& confusion, int64_t class_index) {
    const int64_t n = confusion.num_classes;
    if (class_index < 0 || class_index >= n)
        throw IndexError("class_scores: class " + std::to_string(class_index) + " is outside [0, " +
                         std::to_string(n) + ")");
    int64_t predicted_as = 0, actual = 0;
    for (int64_t k = 0; k < n; ++k) {
        predicted_as += confusion.at(k, class_index);
        actual += confusion.at(class_index, k);
    }
    const int64_t tp = confusion.at(class_index, class_index);
    ClassScores s;
    s.precision = ratio(tp, predicted_as);
    s.recall = ratio(tp, actual);
    const double sum = s.precision + s.recall;
    s.f1 = sum > 0.0 ? 2.0 * s.precision * s.recall / sum : 0.0;
    s.support = actual;
    return s;
}

ClassScores ClassificationMetrics::class_scores(int64_t class_index) const {
    settle();
    return train::class_scores(confusion_, class_index);
}

std::vector<ClassScores> ClassificationMetrics::per_class() const {
    std::vector<ClassScores> out;
    out.reserve(static_cast<size_t>(num_classes_));
    for (int64_t c = 0; c < num_classes_; ++c)
        out.push_back(class_scores(c));
    return out;
}

double ClassificationMetrics::macro_precision() const {
    double sum = 0.0;
    for (const ClassScores& s : per_class())
        sum += s.precision;
    return sum / static_cast<double>(num_classes_);
}

double ClassificationMetrics::macro_recall() const {
    double sum = 0.0;
    for (const ClassScores& s : per_class())
        sum += s.recall;
    return sum / static_cast<double>(num_classes_);
}

double ClassificationMetrics::macro_f1() const {
    double sum = 0.0;
    for (const ClassScores& s : per_class())
        sum += s.f1;
    return sum / static_cast<double>(num_classes_);
}

MetricMap ClassificationMetrics::scalars() const {
    MetricMap m;
    m["accuracy"] = accuracy();
    if (has_top5()) m["top5_accuracy"] = top5_accuracy();
    double precision = 0.0, recall = 0.0, f1 = 0.0;
    for (const ClassScores& s : per_class()) {
        precision += s.precision;
        recall += s.recall;
        f1 += s.f1;
    }
    const double c = static_cast<double>(num_classes_);
    m["macro_precision"] = precision / c;
    m["macro_recall"] = recall / c;
    m["macro_f1"] = f1 / c;
    return m;
}

std::vector<std::string> ClassificationMetrics::names(int64_t num_classes) {
    // The table's classification scores, in its order; top-5 only with at least 5 classes.
    std::vector<std::string> out;
    for (const std::string& name : spec::builtin_metric_names())
        if (spec::describe_metric(name)->task == spec::MetricTask::Classification &&
            (name != "top5_accuracy" || num_classes >= 5))
            out.push_back(name);
    return out;
}

// --- RegressionMetrics --------------------------------------------------------------------------

void RegressionMetrics::update(const Tensor& predictions, const Tensor& targets) {
    if (!predictions.defined() || !targets.defined())
        throw Error("RegressionMetrics::update: predictions and targets must be defined tensors");
    if (!same_shape_ignoring_ones(predictions.shape(), targets.shape()))
        throw ShapeError("RegressionMetrics::update: predictions " + predictions.shape().str() +
                         " and targets " + targets.shape().str() + " must have the same shape");
    if (targets.dtype() == DType::Bool || predictions.dtype() == DType::Bool)
        throw DTypeError("RegressionMetrics::update: predictions and targets must be numbers, "
                         "got bool");
    const int64_t n = predictions.numel();
    if (n == 0) return;

    if (!predictions.device().is_cpu()) {
        const Tensor p = predictions.detach().to(DType::Float64).reshape({-1});
        const Tensor t = targets.detach().to(predictions.device()).to(DType::Float64).reshape({-1});
        const Tensor e = p - t;
        const Tensor mean = t.sum() / static_cast<double>(n);
        const Tensor d = t - mean;
        pending_.push_back({stack({e.abs().sum(), (e * e).sum(), mean, (d * d).sum()}), n});
        if (pending_.size() >= kMaxPending) settle();
        return;
    }
    auto low_precision = [](DType t) {
        return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16;
    };
    BatchRegression b;
    if (low_precision(predictions.dtype()) && low_precision(targets.dtype())) {
        const Tensor p = host_contiguous(predictions, DType::Float32);
        const Tensor t = host_contiguous(targets, DType::Float32);
        b = regression_batch(p.data<float>(), t.data<float>(), n);
    } else {
        const Tensor p = host_contiguous(predictions, DType::Float64);
        const Tensor t = host_contiguous(targets, DType::Float64);
        b = regression_batch(p.data<double>(), t.data<double>(), n);
    }

    settle(); // batches from a device first: the merge goes in batch order
    merge(n, b.abs_error, b.squared_error, b.target_mean, b.target_m2);
}

void RegressionMetrics::merge(int64_t n, double abs_error, double squared_error, double target_mean,
                              double target_m2) const {
    // Chan et al.: merge (count, mean, M2) of the batch into the running totals.
    const double na = static_cast<double>(count_), nb = static_cast<double>(n);
    const double total = na + nb;
    const double delta = target_mean - target_mean_;
    target_mean_ += delta * nb / total;
    target_m2_ += target_m2 + delta * delta * na * nb / total;
    abs_error_sum_ += abs_error;
    squared_error_sum_ += squared_error;
    count_ += n;
}

void RegressionMetrics::settle() const {
    if (pending_.empty()) return;
    TensorList sums;
    for (const PendingBatch& b : pending_)
        sums.push_back(b.sums);
    const Tensor host = stack(sums).to(kCPU).contiguous();
    const double* v = host.data<double>();
    for (size_t i = 0; i < pending_.size(); ++i, v += 4)
        merge(pending_[i].count, v[0], v[1], v[2], v[3]);
    pending_.clear();
}

void RegressionMetrics::reset() {
    *this = RegressionMetrics();
}

double RegressionMetrics::mae() const {
    settle();
    return count_ > 0 ? abs_error_sum_ / static_cast<double>(count_) : 0.0;
}

double RegressionMetrics::mse() const {
    settle();
    return count_ > 0 ? squared_error_sum_ / static_cast<double>(count_) : 0.0;
}

double RegressionMetrics::rmse() const {
    return std::sqrt(mse());
}

double RegressionMetrics::r2() const {
    settle();
    if (count_ == 0) return 0.0;
    if (target_m2_ == 0.0) return squared_error_sum_ == 0.0 ? 1.0 : 0.0;
    return 1.0 - squared_error_sum_ / target_m2_;
}

MetricMap RegressionMetrics::scalars() const {
    return {{"mae", mae()}, {"mse", mse()}, {"rmse", rmse()}, {"r2", r2()}};
}

std::vector<std::string> RegressionMetrics::names() {
    std::vector<std::string> out;
    for (const std::string& name : spec::builtin_metric_names())
        if (spec::describe_metric(name)->task == spec::MetricTask::Regression) out.push_back(name);
    return out;
}

// --- what a run records -------------------------------------------------------------------------

bool higher_is_better(std::string_view metric) {
    const auto description = spec::describe_metric(metric);
    return description && description->higher_is_better;
}

std::vector<MetricInfo> epoch_metrics(bool classification, int64_t num_classes,
                                      bool has_validation) {
    std::vector<std::string> scores = {"loss"};
    if (classification)
        for (auto& name : ClassificationMetrics::names(num_classes))
            scores.push_back(std::move(name));
    std::vector<MetricInfo> out;
    auto add = [&](const std::string& name) { out.push_back({name, higher_is_better(name)}); };
    if (has_validation) {
        for (const auto& name : scores)
            add("val_" + name);
        if (!classification)
            for (const auto& name : RegressionMetrics::names())
                add("val_" + name);
        for (const spec::MetricKind& kind : spec::metric_kinds())
            if (kind.fits(classification)) add("val_" + kind.name);
    }
    for (const auto& name : scores)
        add("train_" + name);
    return out;
}

// --- RunningMean --------------------------------------------------------------------------------

void RunningMean::add(double value, int64_t weight) {
    if (weight < 0)
        throw Error("RunningMean::add: the weight (batch size) must not be negative, got " +
                    std::to_string(weight));
    if (weight == 0) return;
    sum_ += value * static_cast<double>(weight);
    weight_ += weight;
}

} // namespace myelin::train
