#pragma once
// Internal to the layer files (core/nn/layers*.cpp): the repr and input-check helpers they share,
// defined in layers.cpp.
#include <myelin/nn/module.h>

#include <cstdint>
#include <string>

namespace myelin::nn::detail {

// Python's repr of a float ("0.1", "1e-05", "inf"), as PyTorch's reprs show it.
std::string py_float(double v);
// "True" / "False".
const char* py_bool(bool b);
// Throws ShapeError: the layer, the input it expects and what it got.
[[noreturn]] void bad_input(const Module& m, const std::string& expected, const std::string& got);
[[noreturn]] void bad_input(const Module& m, const std::string& expected, const Tensor& x);
// Throws Error naming the layer and `what` unless v > 0.
void require_positive(const Module& m, int64_t v, const char* what);
// The kaiming_uniform_(a=sqrt(5)) + uniform bias init that Linear and Conv layers share.
void reset_linear_like(Tensor& weight, Tensor& bias);
// Python's repr of a tuple of sizes: "(3,)", "(2, 3)".
std::string dims_tuple(const Dims& d);

} // namespace myelin::nn::detail
