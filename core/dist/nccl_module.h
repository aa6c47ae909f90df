#pragma once
// The one entry point of libmyelin_nccl.so (dist/nccl_communicator.cpp), found by
// dist/nccl_loader.cpp with dlsym. Both sides are built from this tree with one compiler.
#include <myelin/dist/communicator.h>

#include <memory>
#include <string>

namespace myelin::dist::nccl_module {

// Null with `error` set when NCCL cannot start.
using StartFunction = std::shared_ptr<Communicator> (*)(std::shared_ptr<Communicator> over,
                                                        int device_index, double timeout_seconds,
                                                        std::string& error);
inline constexpr const char* kStartSymbol = "myelin_nccl_start";

} // namespace myelin::dist::nccl_module
