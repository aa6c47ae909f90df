// Early stopping with PyTorch Lightning's rules (see the header).
#include <myelin/error.h>
#include <myelin/train/early_stopping.h>

#include <cmath>
#include <limits>
#include <sstream>

namespace myelin::train {

namespace {
double initial_best(MetricMode mode) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    return mode == MetricMode::Min ? inf : -inf;
}
} // namespace

MetricMode parse_metric_mode(std::string_view text) {
    if (const auto mode = spec::setting_named<MetricMode>(text)) return *mode;
    throw Error("early stopping: mode must be \"min\" or \"max\", got \"" + std::string(text) +
                "\"");
}

EarlyStopping::EarlyStopping(std::string metric, MetricMode mode, int patience, double min_delta)
    : metric_(std::move(metric)), mode_(mode), patience_(patience), min_delta_(min_delta),
      best_(initial_best(mode)) {
    if (patience < 0)
        throw Error("early stopping on '" + metric_ + "': patience must not be negative, got " +
                    std::to_string(patience));
    if (!(min_delta >= 0.0) || !std::isfinite(min_delta))
        throw Error("early stopping on '" + metric_ +
                    "': min_delta must be a finite number >= 0, got " + std::to_string(min_delta));
}

bool EarlyStopping::update(double value) {
    ++updates_;
    last_value_ = value;
    if (!std::isfinite(value)) { // Lightning's check_finite: a diverged metric ends the run
        should_stop_ = true;
        return false;
    }
    const bool improved =
        mode_ == MetricMode::Min ? value < best_ - min_delta_ : value > best_ + min_delta_;
    if (improved) {
        best_ = value;
        bad_epochs_ = 0;
        return true;
    }
    ++bad_epochs_;
    if (bad_epochs_ >= patience_) should_stop_ = true;
    return false;
}

bool EarlyStopping::has_best() const {
    return std::isfinite(best_);
}

std::string EarlyStopping::stop_reason() const {
    if (!should_stop_) return {};
    std::ostringstream out;
    out.precision(6);
    if (!std::isfinite(last_value_)) {
        out << "early stopping: " << metric_ << " = " << last_value_ << " is not finite";
    } else {
        out << "early stopping: " << metric_ << " did not improve by more than " << min_delta_
            << " for " << bad_epochs_ << (bad_epochs_ == 1 ? " epoch" : " epochs") << " (best "
            << spec::name_of(mode_) << ": " << best_ << ")";
    }
    return out.str();
}

EarlyStoppingState EarlyStopping::state() const {
    return {best_, bad_epochs_, should_stop_, updates_, last_value_};
}

void EarlyStopping::restore(const EarlyStoppingState& state) {
    if (state.bad_epochs < 0 || state.updates < 0)
        throw Error("early stopping on '" + metric_ + "': the saved state is invalid (" +
                    std::to_string(state.bad_epochs) + " bad epochs, " +
                    std::to_string(state.updates) + " updates)");
    best_ = state.best;
    bad_epochs_ = state.bad_epochs;
    should_stop_ = state.should_stop;
    updates_ = state.updates;
    last_value_ = state.last_value;
}

void EarlyStopping::reset() {
    best_ = initial_best(mode_);
    bad_epochs_ = 0;
    should_stop_ = false;
    updates_ = 0;
    last_value_ = 0.0;
}

} // namespace myelin::train
