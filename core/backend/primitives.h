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
    Count
};

inline const char* primitive_name(Primitive p) {
    static constexpr const char* kNames[] = {"copy",         "fill",   "unary",      "binary",
                                             "where",        "reduce", "softmax",    "batched_gemm",
                                             "index_select", "gather", "scatter_add"};
    static_assert(sizeof kNames / sizeof kNames[0] == size_t(Primitive::Count));
    return kNames[size_t(p)];
}

} // namespace myelin::backend
