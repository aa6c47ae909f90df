// start_nccl: loads libmyelin_nccl.so (dist/nccl_communicator.cpp) from libmyelin_core's folder
// the first time a GPU data-parallel run asks for it; nothing else maps NCCL.
#include <myelin/dist/nccl.h>
#include <myelin/error.h>

#include "dist/nccl_module.h"

#include <dlfcn.h>

#include <filesystem>
#include <mutex>

namespace myelin::dist {

bool nccl_built() {
#ifdef MYELIN_WITH_NCCL
    return true;
#else
    return false;
#endif
}

std::shared_ptr<Communicator> start_nccl(std::shared_ptr<Communicator> over, Device device,
                                         double timeout_seconds) {
    if (!over) throw Error("start_nccl: no communicator to start over");
    if (device.type != DeviceType::CUDA)
        throw Error("start_nccl: NCCL connects CUDA devices; " + device.str() + " is not one");
    if (!nccl_built())
        throw Error("this build of myelin has no NCCL (CMake found no nccl.h and libnccl with "
                    "the CUDA toolkit, or the CUDA backend is not built): GPU ranks cannot "
                    "average gradients");
    static std::once_flag once;
    static nccl_module::StartFunction start = nullptr;
    static std::string error;
    std::call_once(once, [] {
        Dl_info self{};
        if (dladdr(reinterpret_cast<const void*>(&nccl_built), &self) == 0 || !self.dli_fname) {
            error = "the core library's folder is unknown";
            return;
        }
        const std::filesystem::path path =
            std::filesystem::path(self.dli_fname).parent_path() / "libmyelin_nccl.so";
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL); // never closed
        if (!handle) {
            const char* why = dlerror();
            error = "the NCCL module could not be loaded: " + std::string(why ? why : path.c_str());
            return;
        }
        start =
            reinterpret_cast<nccl_module::StartFunction>(dlsym(handle, nccl_module::kStartSymbol));
        if (!start)
            error = path.string() + " is not this build's NCCL module (missing " +
                    nccl_module::kStartSymbol + ")";
    });
    if (!start) throw Error(error);
    std::string why;
    std::shared_ptr<Communicator> comm = start(std::move(over), device.index, timeout_seconds, why);
    if (!comm) throw Error("NCCL on " + device.str() + ": " + why);
    return comm;
}

} // namespace myelin::dist
