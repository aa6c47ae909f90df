#pragma once
// Internal: the per-time-step gradient norms of recurrent layers (myelin/nn/recurrent_gradients.h).
// functional_recurrent.cpp takes a sink at a layer's forward when a RecordRecurrentGradients
// scope is installed; the layer's backward then points RecurrentLayerGrads::step_grad_norms at a
// [D, T] buffer, recurrent_kernels.cpp fills it with step_gradient_norm once per step, and
// report_step_gradients hands it to the recorder.
#include "nn/recurrent_kernels.h"

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
void report_step_gradients(const StepGradientSink& sink, const RecurrentLayerShape& s,
                           const std::vector<double>& norms);

// The L2 norm over the batch of the gradient reaching the hidden states of step t of direction
// d: dh [B, H] (from the next step, or h_n's) plus the output's gradient at t (dout [rows, D*H]
// in the shape's row order; null: none), over the sequences with t < their length.
template <typename T>
double step_gradient_norm(const RecurrentLayerShape& s, int d, int64_t t, const T* dh,
                          const T* dout);

} // namespace myelin::nn::detail
