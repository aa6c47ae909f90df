// A plugin whose second kind takes a built-in name: refused whole (its first kind is not
// registered either).
#include <myelin/nn/layers.h>
#include <myelin/plugin/plugin.h>

namespace {

myelin::graph::LayerKind identity_kind(std::string name) {
    myelin::graph::LayerKind k;
    k.name = std::move(name);
    k.doc = "Identity.";
    k.infer = [](const myelin::graph::Attrs&, std::span<const myelin::graph::TensorType> in) {
        return in[0];
    };
    k.build = [](const myelin::graph::Attrs&) { return std::make_shared<myelin::nn::Identity>(); };
    return k;
}

void add_kinds(myelin::plugin::Registry& registry) {
    registry.add(identity_kind("ClashTestIdentity"));
    registry.add(identity_kind("ReLU"));
}

} // namespace

MYELIN_PLUGIN(add_kinds)
