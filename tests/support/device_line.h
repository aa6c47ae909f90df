#pragma once
// The line a test whose answers depend on the device prints first, so that its log (and the GPU
// kit's report) says where it ran: "CUDA: cuda:0 NVIDIA H200 (compute 9.0, 139.8 GiB)" or
// "CUDA: skipped (no device: <reason>)".
#include <myelin/cuda.h>

#include <QtGlobal>

namespace myelin::test {

inline void print_cuda_device() {
    const CudaStatus& status = cuda_status();
    if (status.usable())
        qInfo("CUDA: cuda:0 %s", status.devices.front().summary().c_str());
    else
        qInfo("CUDA: skipped (no device: %s)", status.reason.c_str());
}

} // namespace myelin::test
