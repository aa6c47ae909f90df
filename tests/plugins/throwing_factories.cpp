// A valid plugin whose factories throw exceptions that are not myelin::Error: the host turns
// them into Errors naming the plugin and the kind, and nothing crashes.
#include <myelin/nn/layers.h>
#include <myelin/nn/loss.h>
#include <myelin/plugin/plugin.h>

#include <stdexcept>

namespace {

using namespace myelin;

void add_kinds(plugin::Registry& registry) {
    registry.set_info("throwing", "0.1", "Test plugin: factories that throw.");
    graph::LayerKind layer;
    layer.name = "ThrowingLayer";
    layer.doc = "Builds never; its shape rule throws for mode 1.";
    layer.attrs = {graph::attr::integer("mode", 0, "0: fine shapes, 1: the shape rule throws.", 0)};
    layer.infer = [](const graph::Attrs& a, std::span<const graph::TensorType> in) {
        if (a.get_int("mode") == 1) throw std::logic_error("shape rule exploded");
        return in[0];
    };
    layer.build = [](const graph::Attrs&) -> std::shared_ptr<nn::Module> {
        throw std::runtime_error("no weights today");
    };
    registry.add(std::move(layer));

    spec::LossKind loss;
    loss.name = "ThrowingLoss";
    loss.doc = "Builds never.";
    loss.build = [](const graph::Attrs&, const spec::LossContext&) -> std::shared_ptr<nn::Loss> {
        throw 42;
    };
    registry.add(std::move(loss));
}

} // namespace

MYELIN_PLUGIN(add_kinds)
