#pragma once
// Automatic mixed precision on CPU, like PyTorch's torch.autocast("cpu", dtype=torch.bfloat16):
// while a guard is active on a thread, linear, conv1d, conv2d and conv_transpose2d given float32
// CPU operands multiply in bfloat16 (operands rounded to nearest even, products accumulated in
// float32) and return float32. Every other op, and backward (which uses what forward decided,
// whatever the state is then), is unaffected. Parameters and their gradients stay float32.
#include <myelin/dtype.h>

#include <optional>

namespace myelin {

// The lower dtype autocast-eligible ops compute in on this thread, or nullopt when off.
std::optional<DType> autocast_dtype();

// Sets this thread's autocast dtype for its lifetime and restores the previous state after, so
// guards nest. std::nullopt turns autocast off inside an autocast region. Only bfloat16 is
// supported (float16 has no fast CPU kernels here); other dtypes throw DTypeError.
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
