// A plugin built for another interface version: refused before any of its code runs.
#include <myelin/plugin/plugin.h>

extern "C" __attribute__((visibility("default"))) int myelin_plugin_abi_version() {
    return MYELIN_PLUGIN_ABI_VERSION + 1;
}
extern "C" __attribute__((visibility("default"))) const char* myelin_plugin_cxx_abi() {
    return MYELIN_PLUGIN_CXX_ABI;
}
extern "C" __attribute__((visibility("default"))) void
myelin_plugin_register(myelin::plugin::Registry&) {
    __builtin_trap(); // must never be called
}
