#pragma once
// oneDNN helpers over tensors for the CPU kernels that keep buffers of their own (the matmuls,
// the recurrent step GEMMs): dnnl_util.h plus memory wrappers and scratchpads as tensors.
#include "backend/cpu/dnnl_util.h"
#include "tensor/tensor_impl.h"

namespace myelin::backend::dnnl_util {

// A oneDNN memory object over a contiguous tensor's data (no copy).
inline dnnl::memory memory_of(const dnnl::memory::desc& md, const Tensor& t) {
    return dnnl::memory(md, engine(), t.data_ptr());
}

// Adds a scratchpad of `desc`'s size to `args` (none when it needs none); the tensor holds its
// bytes (the allocator reuses large blocks) and must live until the execution has finished.
inline Tensor add_scratchpad(const dnnl::memory::desc& desc,
                             std::unordered_map<int, dnnl::memory>& args) {
    const size_t bytes = desc.get_size();
    if (bytes == 0) return Tensor();
    Tensor buffer = myelin::detail::make_tensor({int64_t(bytes)}, DType::UInt8, kCPU);
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(desc, engine(), buffer.data_ptr()));
    return buffer;
}

} // namespace myelin::backend::dnnl_util
