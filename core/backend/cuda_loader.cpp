// Loads libmyelin_cuda.so from the folder libmyelin_core was loaded from (the build's core/
// folder, or the install's private library folder) and finds its two entry points.
#include "backend/cuda_loader.h"

#include "backend/cuda/cuda_probe.h"

#include <dlfcn.h>

#include <filesystem>
#include <string>

namespace myelin::backend::cuda_module {

namespace {

struct Module {
    void (*probe)(CudaStatus*) = nullptr;
    void (*register_backend)() = nullptr;
    std::string error; // why the module could not be used
};

const Module& module() {
    static const Module loaded = [] {
        Module m;
        Dl_info self{};
        if (dladdr(reinterpret_cast<const void*>(&module), &self) == 0 || !self.dli_fname) {
            m.error = "the core library's folder is unknown";
            return m;
        }
        const std::filesystem::path path =
            std::filesystem::path(self.dli_fname).parent_path() / "libmyelin_cuda.so";
        // Never closed: the backend it registers lives until the process ends.
        void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            const char* why = dlerror();
            m.error = "the CUDA backend module could not be loaded: " +
                      std::string(why ? why : path.string());
            return m;
        }
        m.probe = reinterpret_cast<void (*)(CudaStatus*)>(dlsym(handle, cuda::kProbeSymbol));
        m.register_backend = reinterpret_cast<void (*)()>(dlsym(handle, cuda::kRegisterSymbol));
        if (!m.probe || !m.register_backend)
            m.error = path.string() + " is not this build's CUDA backend module (missing " +
                      (m.probe ? cuda::kRegisterSymbol : cuda::kProbeSymbol) + ")";
        return m;
    }();
    return loaded;
}

} // namespace

CudaStatus probe() {
    const Module& m = module();
    CudaStatus status;
    status.compiled = true;
    if (!m.error.empty()) {
        status.build = "module not loaded";
        status.reason = m.error;
        return status;
    }
    m.probe(&status);
    return status;
}

void ensure_registered() {
    const Module& m = module();
    if (m.error.empty()) m.register_backend();
}

} // namespace myelin::backend::cuda_module
