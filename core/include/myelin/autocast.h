#pragma once
// Automatic mixed precision, like PyTorch's torch.autocast: while a guard is active on a thread,
// linear, conv1d, conv2d and conv_transpose2d given float32 operands multiply in the lower dtype
// (operands rounded to nearest even, products accumulated in float32) and return float32.
//  * bfloat16 (torch.autocast("cpu", dtype=torch.bfloat16)): on the CPU, oneDNN's bf16 kernels.
//  * float16 (torch.autocast("cuda")), and bfloat16 off the CPU: linear runs the device's GEMM on
//    half operands (cuBLAS tensor cores on CUDA) into float32; convolutions run the float32
//    kernels on operands rounded to the lower dtype (a product of two such values is exact in
//    float32, so the values are the lowered product's), with the output's gradient rounded too.
// Every other op, and backward (which uses what forward decided, whatever the state is then), is
// unaffected. Parameters and their gradients stay float32.
#include <myelin/dtype.h>

#include <optional>

namespace myelin {

// The lower dtype autocast-eligible ops compute in on this thread, or nullopt when off.
std::optional<DType> autocast_dtype();

// Sets this thread's autocast dtype for its lifetime and restores the previous state after, so
// guards nest. std::nullopt turns autocast off inside an autocast region. bfloat16 or float16;
// other dtypes throw DTypeError.
class AutocastGuard {
  public:
    explicit AutocastGuard(std::optional<DType> lower = DType::BFloat16);
    ~AutocastGuard();
    AutocastGuard(const AutocastGuard&) = delete;
    AutocastGuard& operator=(const AutocastGuard&) = delete;

  private:
    std::optional<DType> previous_;
};

} // namespace myelin
