// Per-time-step gradient norms of recurrent layers: the thread's scope, the recorder and the
// norm the backward takes at every step (see recurrent_step_norms.h).
#include "nn/recurrent_step_norms.h"

#include <cmath>
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

void report_step_gradients(const StepGradientSink& sink, const RecurrentLayerShape& s,
                           const std::vector<double>& norms) {
    for (int d = 0; d < s.D; ++d) {
        const auto first = norms.begin() + d * s.T;
        sink.target.recorder->add(
            {sink.target.label, sink.layer, d, std::vector<double>(first, first + s.T)});
    }
}

template <typename T>
double step_gradient_norm(const RecurrentLayerShape& s, int d, int64_t t, const T* dh,
                          const T* dout) {
    const int64_t H = s.H, DH = s.D * s.H;
    double squares = 0;
    for (int64_t b = 0; b < s.B; ++b) {
        if (s.lengths && t >= s.lengths[b]) continue; // padded: no gradient of its own
        const int64_t row = s.batch_first ? b * s.T + t : t * s.B + b;
        const T* g = dh + b * H;
        const T* y = dout ? dout + row * DH + d * H : nullptr;
        for (int64_t j = 0; j < H; ++j) {
            const double v = double(g[j]) + (y ? double(y[j]) : 0.0);
            squares += v * v;
        }
    }
    return std::sqrt(squares);
}

template double step_gradient_norm<float>(const RecurrentLayerShape&, int, int64_t, const float*,
                                          const float*);
template double step_gradient_norm<double>(const RecurrentLayerShape&, int, int64_t, const double*,
                                           const double*);

} // namespace detail
} // namespace myelin::nn
