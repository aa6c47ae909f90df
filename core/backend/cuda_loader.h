#pragma once
// The core's way into the CUDA backend, which lives in its own module (libmyelin_cuda.so beside
// libmyelin_core): loaded with dlopen the first time either function is called, so a process
// that never asks about CUDA never loads the CUDA runtime, cuBLAS or cuDNN. Only built with the
// backend (MYELIN_WITH_CUDA_BACKEND).
#include <myelin/cuda.h>

namespace myelin::backend::cuda_module {

// The module's probe of the CUDA runtime; when the module cannot be loaded, a status that says
// why (compiled, with no device). Never throws.
CudaStatus probe();
// Registers the CUDA backend when a device is usable (once); nothing when the module is absent.
void ensure_registered();

} // namespace myelin::backend::cuda_module
