#pragma once
// The entries of the backend table by name, for a backend's supports(primitive, dtype) and the
// message when it cannot run one ("batched_gemm on float16 is not supported by ...").
#include <cstddef>
#include <cstdint>

namespace myelin::backend {

enum class Primitive : uint8_t {
    Copy,
    Fill,
    Unary,
    Binary,
    Where,
    Reduce,
    Softmax,
    BatchedGemm,
    IndexSelect,
    Gather,
    ScatterAdd,
    // The NN-kernel table (nn_kernels.h): forward and backward of each op under one name, except
    // convolution, whose three passes a backend may support separately.
    ConvForward,
    ConvBackwardData,
    ConvBackwardWeights,
    MaxPool2d,
    AvgPool2d,
    AdaptiveAvgPool2d,
    BatchNorm,
    LayerNorm,
    GroupNorm,
    // Sequence models (sequence_kernels.h).
    Recurrent,
    AttentionHeads,
    Matmul,
    // The training table (train_kernels.h).
    OptimizerStep,
    ClassLoss,
    ClassScores,
    Dropout,
    GradNorm,
    Count
};

inline const char* primitive_name(Primitive p) {
    static constexpr const char* kNames[] = {"copy",
                                             "fill",
                                             "unary",
                                             "binary",
                                             "where",
                                             "reduce",
                                             "softmax",
                                             "batched_gemm",
                                             "index_select",
                                             "gather",
                                             "scatter_add",
                                             "conv_forward",
                                             "conv_backward_data",
                                             "conv_backward_weights",
                                             "max_pool2d",
                                             "avg_pool2d",
                                             "adaptive_avg_pool2d",
                                             "batch_norm",
                                             "layer_norm",
                                             "group_norm",
                                             "recurrent",
                                             "attention_heads",
                                             "matmul",
                                             "optimizer_step",
                                             "class_loss",
                                             "class_scores",
                                             "dropout",
                                             "grad_norm"};
    static_assert(sizeof kNames / sizeof kNames[0] == size_t(Primitive::Count));
    return kNames[size_t(p)];
}

} // namespace myelin::backend
