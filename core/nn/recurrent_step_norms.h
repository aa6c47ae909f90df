#pragma once
// Internal: the per-time-step gradient norms of recurrent layers (myelin/nn/recurrent_gradients.h).
// functional_recurrent.cpp takes a sink at a layer's forward when a RecordRecurrentGradients
// scope is installed; the layer's backward then points RecurrentBackwardArgs::step_grad_norms at
// a [D, T] buffer, the backend's recurrent_backward fills it once per step, and
// report_step_gradients hands it to the recorder.
#include "backend/sequence_kernels.h"

#include <myelin/nn/recurrent_gradients.h>

#include <memory>
#include <vector>

namespace myelin::nn::detail {

// What one layer call of a stack reports to.
struct StepGradientSink {
    RecordRecurrentGradients::Target target;
    int64_t layer = 0; // in the stack
};

// The sink for layer `layer` of a recurrent call forwarded now on this thread; null when no
// scope is installed (then nothing is recorded).
std::shared_ptr<const StepGradientSink> step_gradient_sink(int64_t layer);

// norms [D, T] as the kernel filled them: one RecurrentStepGradients per direction.
void report_step_gradients(const StepGradientSink& sink, const backend::RecurrentGeometry& s,
                           const std::vector<double>& norms);

} // namespace myelin::nn::detail
