#pragma once
// Internal to quant/: an int8 weight as a checkpoint holds it (a UInt8 tensor of the int8 values'
// bytes, in the weight's shape; safetensors tags it "I8") and back.
#include <myelin/quant/quantize.h>
#include <myelin/tensor.h>

#include <cstring>
#include <utility>
#include <vector>

namespace myelin::quant::detail {

inline Tensor int8_bytes(const QuantizedWeight& w) {
    Tensor t = empty(w.shape, DType::UInt8);
    std::memcpy(t.data_ptr(), w.values.data(), w.values.size());
    return t;
}

// `bytes` (UInt8, the weight's shape) with its scales: one per output channel, or one.
inline QuantizedWeight weight_from_bytes(const Tensor& bytes, std::vector<float> scales) {
    QuantizedWeight w;
    w.shape = bytes.sizes();
    w.values.resize(size_t(bytes.numel()));
    std::memcpy(w.values.data(), bytes.contiguous().data_ptr(), w.values.size());
    w.scales = std::move(scales);
    return w;
}

} // namespace myelin::quant::detail
