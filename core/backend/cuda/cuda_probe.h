#pragma once
// Host-only entry points of the CUDA backend (no CUDA headers here): the core calls them when
// it was built with the backend (MYELIN_WITH_CUDA_BACKEND).
#include <myelin/cuda.h>

namespace myelin::backend::cuda {

// Asks the CUDA runtime for its devices; never throws (a failure becomes the reason).
CudaStatus probe();
// Registers the CUDA backend when a device is usable (once; later calls do nothing).
void ensure_registered();

} // namespace myelin::backend::cuda
