#include "backend/nn_kernels.h"

#include <myelin/error.h>

#include <string>

namespace myelin::backend {

void NnKernels::conv_backward(const ConvGeometry& g, const View& x, const View& w,
                              const View& grad_y, const View* grad_x, const View* grad_w,
                              const View* grad_bias) {
    if (grad_x) conv_backward_data(g, grad_y, w, *grad_x);
    if (grad_w) conv_backward_weights(g, x, grad_y, *grad_w, grad_bias);
}

// Only called where conv_relu_fused() said yes, which the default never does.
void NnKernels::conv_relu_forward(const ConvGeometry&, const View&, const View&, const View*,
                                  const View&) {
    throw Error("conv_relu_forward: this backend does not fuse convolution and ReLU");
}
void NnKernels::conv_relu_backward(const ConvGeometry&, const View&, const View&, const View&,
                                   const View&, const View*, const View*, const View*) {
    throw Error("conv_relu_backward: this backend does not fuse convolution and ReLU");
}

// Likewise only where conv_relu_pool_fused() said yes.
void NnKernels::conv_relu_pool_forward(const ConvGeometry&, const PoolGeometry&, const View&,
                                       const View&, const View*, const View&, const View&) {
    throw Error(
        "conv_relu_pool_forward: this backend does not fuse convolution, ReLU and max pool");
}
void NnKernels::conv_relu_pool_backward(const ConvGeometry&, const PoolGeometry&, const View&,
                                        const View&, const View&, const View&, const View&,
                                        const View*, const View*, const View*) {
    throw Error(
        "conv_relu_pool_backward: this backend does not fuse convolution, ReLU and max pool");
}

namespace {
[[noreturn]] void refuse(const char* kernel) {
    throw Error(std::string(kernel) + ": this backend has no such kernel (supports() said no)");
}
} // namespace

void NnKernels::recurrent_forward(const RecurrentGeometry&, const RecurrentWeights&,
                                  const RecurrentForwardArgs&, const RecurrentSaved&) {
    refuse("recurrent_forward");
}
void NnKernels::recurrent_backward(const RecurrentGeometry&, const RecurrentWeights&,
                                   const RecurrentSaved&, const RecurrentBackwardArgs&) {
    refuse("recurrent_backward");
}
void NnKernels::head_gemm(const HeadGemmGeometry&, const HeadOperand&, const HeadOperand&,
                          const HeadResult&) {
    refuse("head_gemm");
}
void NnKernels::attention_softmax(DType, const void*, int64_t, int64_t, void*,
                                  const kernels::DropoutStream*, void*, uint8_t*) {
    refuse("attention_softmax");
}
void NnKernels::attention_softmax_backward(DType, const void*, const void*, int64_t, int64_t,
                                           const kernels::DropoutStream*, const uint8_t*, void*) {
    refuse("attention_softmax_backward");
}
bool NnKernels::matmul(const MatmulGeometry&, const MatmulOperand&, const MatmulOperand&,
                       const void*, void*) {
    refuse("matmul");
}

NnKernels& nn_kernels(Backend& backend, Primitive p, DType dtype) {
    NnKernels* kernels = backend.nn_kernels();
    if (!kernels)
        throw DeviceError(std::string(primitive_name(p)) + " on " + dtype_name(dtype) +
                          " is not supported by the " + backend.info().name + " backend (" +
                          backend.info().details + "): it has no NN kernels in this build");
    backend.require(p, dtype);
    return *kernels;
}

} // namespace myelin::backend
