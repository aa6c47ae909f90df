// A plugin whose registration function throws: refused, nothing registered.
#include <myelin/plugin/plugin.h>

#include <stdexcept>

namespace {
void add_kinds(myelin::plugin::Registry&) {
    throw std::runtime_error("cannot find my license file");
}
} // namespace

MYELIN_PLUGIN(add_kinds)
