#pragma once
// Streaming metrics: accumulators fed one batch at a time (training or validation) whose results
// cover everything seen since construction or the last reset(). Results of an accumulator that
// has seen nothing are 0.
#include <myelin/tensor.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace myelin::train {

// Named scalar results ("accuracy", "macro_f1", "rmse", ...), as events and the store carry them.
using MetricMap = std::map<std::string, double>;

// counts[t * num_classes + p]: samples of true class t predicted as class p.
struct ConfusionMatrix {
    int64_t num_classes = 0;
    std::vector<int64_t> counts;
    std::vector<std::string> class_names; // empty or num_classes names

    int64_t at(int64_t true_class, int64_t predicted_class) const {
        return counts[static_cast<size_t>(true_class * num_classes + predicted_class)];
    }
};

struct ClassScores {
    double precision = 0.0; // tp / (tp + fp); 0 when the class was never predicted
    double recall = 0.0;    // tp / (tp + fn); 0 when the class never occurred
    double f1 = 0.0;        // harmonic mean of the two; 0 when both are 0
    int64_t support = 0;    // samples whose true class is this one
};

// Precision, recall, F1 and support of one class from a confusion matrix (true classes as
// rows); what divides by zero is 0. Throws IndexError for a class outside [0, num_classes).
ClassScores class_scores(const ConfusionMatrix& confusion, int64_t class_index);

// Accuracy, top-5 accuracy, confusion matrix and per-class precision/recall/F1 over batches of
// logits [N, C] (any floating dtype, any device, any strides) and class-index targets [N]
// (int64, or another integer dtype). The prediction is the argmax of the logits, the first one
// on ties, NaN counting as the largest value (torch.argmax); top-k counts a sample when fewer
// than k classes rank above its target under that same order, so top-1 == accuracy.
// Per-class scores that divide by zero are 0 (scikit-learn's zero_division=0).
class ClassificationMetrics {
  public:
    explicit ClassificationMetrics(int64_t num_classes, std::vector<std::string> class_names = {});

    // Throws ShapeError for shapes other than [N, C] / [N], DTypeError for non-floating logits or
    // non-integer targets, and Error naming the first label outside [0, C).
    void update(const Tensor& logits, const Tensor& targets);
    void reset();
    // Every count (the confusion matrix, then count, correct, top-5 correct) in one vector, and
    // back: how data-parallel ranks sum an epoch's metrics.
    std::vector<int64_t> raw_counts() const;
    void set_raw_counts(const std::vector<int64_t>& counts);

    int64_t num_classes() const { return num_classes_; }
    const std::vector<std::string>& class_names() const { return class_names_; }
    int64_t count() const {
        settle();
        return count_;
    }
    int64_t correct() const {
        settle();
        return correct_;
    }
    double accuracy() const;
    // Top-5 is defined when there are at least 5 classes (torch.topk(5) needs them); with
    // exactly 5 it is trivially 1. top5_accuracy() throws when !has_top5().
    bool has_top5() const { return num_classes_ >= 5; }
    int64_t top5_correct() const {
        settle();
        return top5_correct_;
    }
    double top5_accuracy() const;

    const ConfusionMatrix& confusion_matrix() const {
        settle();
        return confusion_;
    }
    ClassScores class_scores(int64_t class_index) const;
    std::vector<ClassScores> per_class() const;
    // Unweighted means over all classes (scikit-learn's average="macro").
    double macro_precision() const;
    double macro_recall() const;
    double macro_f1() const;

    // accuracy, top5_accuracy (when defined), macro_precision, macro_recall, macro_f1.
    MetricMap scalars() const;
    // The names scalars() has for `num_classes` classes.
    static std::vector<std::string> names(int64_t num_classes);

  private:
    // Logits off the host are scored on their device (nn::functional::class_scores) and the
    // rows' [label, predicted, classes above the label] wait there until a result is read:
    // settle() counts them all after one copy to the host, so a training step never waits for
    // the device to hand its logits over. At most kMaxPendingRows wait.
    static constexpr int64_t kMaxPendingRows = int64_t(1) << 20;
    void settle() const;
    int64_t num_classes_;
    std::vector<std::string> class_names_;
    mutable std::vector<Tensor> pending_; // int64 [rows, 3] each, on the device
    mutable int64_t pending_rows_ = 0;
    mutable ConfusionMatrix confusion_;
    mutable int64_t count_ = 0;
    mutable int64_t correct_ = 0;
    mutable int64_t top5_correct_ = 0;
};

// MAE, MSE, RMSE and R² over batches of predictions and targets of the same shape (a size-1
// dimension may differ: [N, 1] against [N] is accepted; broadcasting is not). Every element counts
// as one sample: with several outputs the results are pooled over all of them, not averaged per
// output. Sums are kept in double; the target variance is merged batch by batch with Chan's
// formula, so R² stays accurate for targets with a large mean and a small spread.
// R² = 1 - SS_res / SS_tot; when the targets are constant (SS_tot == 0) it is 1 for a perfect
// prediction and 0 otherwise (scikit-learn's force_finite). NaN in the inputs propagates.
// Predictions off the host are summed on their device (in double) and merged when a result is
// read, in batch order, from one copy of every batch's sums.
class RegressionMetrics {
  public:
    void update(const Tensor& predictions, const Tensor& targets);
    void reset();

    int64_t count() const {
        settle();
        return count_;
    }
    double mae() const;
    double mse() const;
    double rmse() const;
    double r2() const;
    MetricMap scalars() const;               // mae, mse, rmse, r2
    static std::vector<std::string> names(); // the names scalars() has

    // What the results are computed from (data-parallel evaluation combines the ranks').
    struct Sums {
        int64_t count = 0;
        double abs_error_sum = 0.0, squared_error_sum = 0.0, target_mean = 0.0, target_m2 = 0.0;
    };
    Sums sums() const {
        settle();
        return {count_, abs_error_sum_, squared_error_sum_, target_mean_, target_m2_};
    }
    void set_sums(const Sums& s) {
        pending_.clear();
        count_ = s.count;
        abs_error_sum_ = s.abs_error_sum;
        squared_error_sum_ = s.squared_error_sum;
        target_mean_ = s.target_mean;
        target_m2_ = s.target_m2;
    }

  private:
    // Adds one batch: its error sums, and (count, mean, M2) of its targets by Chan's formula.
    void merge(int64_t n, double abs_error, double squared_error, double target_mean,
               double target_m2) const;
    void settle() const;
    static constexpr size_t kMaxPending = 4096; // batches waiting on the device
    struct PendingBatch {
        Tensor sums; // Float64 [4] on the device: Σ|e|, Σe², target mean, target M2
        int64_t count;
    };
    mutable std::vector<PendingBatch> pending_;
    mutable int64_t count_ = 0;
    mutable double abs_error_sum_ = 0.0;
    mutable double squared_error_sum_ = 0.0;
    mutable double target_mean_ = 0.0;
    mutable double target_m2_ = 0.0; // sum of squared deviations of the targets from their mean
};

// An epoch metric as a project names it ("val_loss", "train_accuracy") and which way is better.
struct MetricInfo {
    std::string name;
    bool higher_is_better = false;
};

// Whether a larger value of `metric` is better (accuracy, precision, recall, F1, R²), with or
// without its "val_" / "train_" prefix; losses and errors are better lower.
bool higher_is_better(std::string_view metric);

// Every epoch metric a run records, as the Trainer computes them: validation (when the data has
// a validation split) the loss and the task's metrics (classification: ClassificationMetrics for
// `num_classes`; regression: RegressionMetrics), training the loss and, for classification, the
// same scores. What the studio offers for early stopping and ReduceLROnPlateau.
std::vector<MetricInfo> epoch_metrics(bool classification, int64_t num_classes,
                                      bool has_validation);

// Mean of per-batch values weighted by batch size, e.g. the epoch loss from batch-mean losses
// (a smaller last batch counts for less).
class RunningMean {
  public:
    void add(double value, int64_t weight = 1);
    void reset() { *this = RunningMean(); }
    double mean() const { return weight_ > 0 ? sum_ / static_cast<double>(weight_) : 0.0; }
    int64_t total_weight() const { return weight_; }

  private:
    double sum_ = 0.0;
    int64_t weight_ = 0;
};

} // namespace myelin::train
