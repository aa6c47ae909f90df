#pragma once
// The plugin interface. A plugin is a shared library, compiled against these headers and linked
// to libmyelin_core, that adds kinds to core's registries: layer kinds (shape rule, parameter
// count, FLOPs, and a builder of an nn::Module whose forward uses core's ops, so autograd,
// hooks and state_dict work as for built-in layers), losses, optimizers, LR schedules, data
// sources, transforms and evaluation metrics. They appear in the studio's palette and pages, the
// CLI and the project format like built-in kinds.
//
// A plugin names its registration function once, in one source file:
//
//     static void add_kinds(myelin::plugin::Registry& registry) {
//         registry.set_info("my-layers", "1.0", "What it adds.");
//         registry.add(my_layer_kind());
//     }
//     MYELIN_PLUGIN(add_kinds)
//
// The host (myelin/plugin/loader.h) loads it only when the interface version and the C++ ABI it
// was built with are this build's, and only whole: when the function throws or any kind is
// refused (a name already taken, a missing factory), nothing of the plugin is registered.
#include <myelin/graph/registry.h>
#include <myelin/spec/components.h>

#include <string>
#include <vector>

// Raised whenever what a plugin sees changes layout or meaning: this header, graph::LayerKind,
// the spec:: kind records, nn::Module, Tensor and the other types their functions take.
#define MYELIN_PLUGIN_ABI_VERSION 5

#define MYELIN_PLUGIN_STRINGIFY_(x) #x
#define MYELIN_PLUGIN_STRINGIFY(x) MYELIN_PLUGIN_STRINGIFY_(x)
// The C++ ABI a plugin is compiled with: the Itanium ABI version and libstdc++'s string/list ABI.
#define MYELIN_PLUGIN_CXX_ABI                                                                      \
    "gxx-abi-" MYELIN_PLUGIN_STRINGIFY(__GXX_ABI_VERSION) "-cxx11-" MYELIN_PLUGIN_STRINGIFY(       \
        _GLIBCXX_USE_CXX11_ABI)

namespace myelin::plugin {

// What a plugin's registration function fills. Kinds are kept here until the function returns;
// the loader then checks and registers them all or none.
class Registry {
  public:
    void set_info(std::string name, std::string version, std::string description);
    void add(graph::LayerKind kind);
    void add(spec::LossKind kind);
    void add(spec::OptimizerKind kind);
    void add(spec::SchedulerKind kind);
    void add(spec::DataSourceKind kind);
    void add(spec::TransformKind kind);
    void add(spec::MetricKind kind);

    // --- for the loader ---
    std::string name, version, description;
    std::vector<graph::LayerKind> layers;
    std::vector<spec::LossKind> losses;
    std::vector<spec::OptimizerKind> optimizers;
    std::vector<spec::SchedulerKind> schedulers;
    std::vector<spec::DataSourceKind> data_sources;
    std::vector<spec::TransformKind> transforms;
    std::vector<spec::MetricKind> metrics;
};

} // namespace myelin::plugin

// The entry points the loader looks up (C names, so no mangling is involved in finding them).
#define MYELIN_PLUGIN(register_function)                                                           \
    extern "C" __attribute__((visibility("default"))) int myelin_plugin_abi_version() {            \
        return MYELIN_PLUGIN_ABI_VERSION;                                                          \
    }                                                                                              \
    extern "C" __attribute__((visibility("default"))) const char* myelin_plugin_cxx_abi() {        \
        return MYELIN_PLUGIN_CXX_ABI;                                                              \
    }                                                                                              \
    extern "C" __attribute__((visibility("default"))) void myelin_plugin_register(                 \
        myelin::plugin::Registry& registry) {                                                      \
        register_function(registry);                                                               \
    }
