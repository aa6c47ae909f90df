// Per-time-step gradient norms of recurrent layers: the thread's scope, the recorder and the
// norm the backward takes at every step (see recurrent_step_norms.h).
#include "nn/recurrent_step_norms.h"

#include <utility>

namespace myelin::nn {

namespace {
thread_local const RecordRecurrentGradients::Target* current_target = nullptr;
} // namespace

void RecurrentGradientRecorder::add(RecurrentStepGradients gradients) {
    std::lock_guard lock(mutex_);
    recorded_.push_back(std::move(gradients));
}

std::vector<RecurrentStepGradients> RecurrentGradientRecorder::take() {
    std::lock_guard lock(mutex_);
    return std::exchange(recorded_, {});
}

RecordRecurrentGradients::RecordRecurrentGradients(
    std::shared_ptr<RecurrentGradientRecorder> recorder, std::string label)
    : target_{std::move(recorder), std::move(label)}, previous_(current_target) {
    current_target = target_.recorder ? &target_ : previous_;
}

RecordRecurrentGradients::~RecordRecurrentGradients() {
    current_target = previous_;
}

const RecordRecurrentGradients::Target* RecordRecurrentGradients::current() {
    return current_target;
}

namespace detail {

std::shared_ptr<const StepGradientSink> step_gradient_sink(int64_t layer) {
    const RecordRecurrentGradients::Target* target = RecordRecurrentGradients::current();
    if (!target) return nullptr;
    return std::make_shared<const StepGradientSink>(StepGradientSink{*target, layer});
}

void report_step_gradients(const StepGradientSink& sink, const backend::RecurrentGeometry& s,
                           const std::vector<double>& norms) {
    for (int d = 0; d < s.D; ++d) {
        const auto first = norms.begin() + d * s.T;
        sink.target.recorder->add(
            {sink.target.label, sink.layer, d, std::vector<double>(first, first + s.T)});
    }
}

} // namespace detail
} // namespace myelin::nn
