#include "backend/train_kernels.h"

#include <myelin/error.h>

#include <string>

namespace myelin::backend {

TrainKernels& train_kernels(Backend& backend, Primitive p, DType dtype) {
    TrainKernels* kernels = backend.train_kernels();
    if (!kernels)
        throw DeviceError(std::string(primitive_name(p)) + " on " + dtype_name(dtype) +
                          " is not supported by the " + backend.info().name + " backend (" +
                          backend.info().details + "): it has no training kernels in this build");
    backend.require(p, dtype);
    return *kernels;
}

} // namespace myelin::backend
