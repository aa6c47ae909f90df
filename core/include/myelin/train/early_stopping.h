#pragma once
// Early stopping on a validation metric, with PyTorch Lightning's EarlyStopping semantics:
// a value improves when it beats the best so far by more than min_delta (value < best - min_delta
// in min mode, value > best + min_delta in max mode); only then does it become the new best.
// Every other value is a bad epoch; the run should stop once `patience` bad epochs follow the
// last improvement (patience 0: at the first one), or at once when the metric is NaN or ±Inf
// (Lightning's check_finite).
#include <myelin/spec/training.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace myelin::train {

using spec::MetricMode;                              // its words: spec::setting_names(MetricMode{})
MetricMode parse_metric_mode(std::string_view text); // "min" | "max"; throws Error otherwise

// What resume needs to continue exactly where a run stopped.
struct EarlyStoppingState {
    double best = 0.0; // ±inf before the first update
    int bad_epochs = 0;
    bool should_stop = false;
    int64_t updates = 0;
    double last_value = 0.0;
};

class EarlyStopping {
  public:
    // Throws Error for patience < 0 or a negative / non-finite min_delta.
    EarlyStopping(std::string metric, MetricMode mode, int patience, double min_delta = 0.0);

    // Records one validation value; returns whether it is a new best (the checkpoint to keep).
    // Once should_stop() is true it stays true (until reset/restore); later values still update
    // best() and bad_epochs().
    bool update(double value);
    bool should_stop() const { return should_stop_; }
    double best() const { return best_; }
    bool has_best() const; // a finite value has been recorded
    int bad_epochs() const { return bad_epochs_; }
    int64_t updates() const { return updates_; }
    // Why should_stop() turned true, for the run's log; empty while it is false.
    std::string stop_reason() const;

    const std::string& metric() const { return metric_; }
    MetricMode mode() const { return mode_; }
    int patience() const { return patience_; }
    double min_delta() const { return min_delta_; }

    EarlyStoppingState state() const;
    void restore(const EarlyStoppingState& state);
    void reset();

  private:
    std::string metric_;
    MetricMode mode_;
    int patience_;
    double min_delta_;
    double best_;
    int bad_epochs_ = 0;
    bool should_stop_ = false;
    double last_value_ = 0.0;
    int64_t updates_ = 0;
};

} // namespace myelin::train
