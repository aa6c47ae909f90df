#pragma once
// Host-only entry points of the CUDA backend (no CUDA headers here). The backend is a module the
// core loads with dlopen (backend/cuda_loader.cpp), which finds the two extern "C" functions
// below by name; inside the module they call probe() and ensure_registered().
#include <myelin/cuda.h>

namespace myelin::backend::cuda {

// Asks the CUDA runtime for its devices; never throws (a failure becomes the reason).
CudaStatus probe();
// Registers the CUDA backend when a device is usable (once; later calls do nothing).
void ensure_registered();

inline constexpr const char* kProbeSymbol = "myelin_cuda_module_probe";
inline constexpr const char* kRegisterSymbol = "myelin_cuda_module_register";

} // namespace myelin::backend::cuda

// Distinct names from the core's cuda_module functions: a call inside the module must never bind
// to the core's loader (ELF lets an earlier-loaded library's symbol win).
extern "C" void myelin_cuda_module_probe(myelin::CudaStatus* out);
extern "C" void myelin_cuda_module_register();
