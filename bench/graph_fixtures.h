#pragma once
// The graph the editor benchmarks share: a chain of residual conv blocks (Conv2d, BatchNorm2d,
// ReLU, Add) of about `target_nodes` nodes, ending in pooling, Flatten, Linear and Output.
#include <myelin/graph/model_spec.h>

#include <cstdint>
#include <vector>

namespace myelin::bench {

inline graph::ModelSpec residual_chain(int target_nodes) {
    using namespace myelin::graph;

    ModelSpec spec;
    NodeId x = spec.add_node("Input", "", {{"shape", std::vector<int64_t>{16, 32, 32}}});
    int block = 0;
    while (int(spec.nodes.size()) + 7 < target_nodes) {
        auto conv = [&](NodeId in) {
            NodeId c = spec.add_node("Conv2d", "",
                                     {{"in_channels", int64_t(16)},
                                      {"out_channels", int64_t(16)},
                                      {"kernel_size", int64_t(3)},
                                      {"padding", int64_t(1)}});
            spec.connect(in, c);
            NodeId bn = spec.add_node("BatchNorm2d", "", {{"num_features", int64_t(16)}});
            spec.connect(c, bn);
            return bn;
        };
        NodeId a = conv(x);
        NodeId r = spec.add_node("ReLU");
        spec.connect(a, r);
        NodeId b = conv(r);
        NodeId add = spec.add_node("Add");
        spec.connect(b, add, 0);
        spec.connect(x, add, 1);
        x = spec.add_node("ReLU");
        spec.connect(add, x);
        ++block;
    }
    NodeId pool = spec.add_node("AdaptiveAvgPool2d");
    spec.connect(x, pool);
    NodeId flat = spec.add_node("Flatten");
    spec.connect(pool, flat);
    NodeId fc =
        spec.add_node("Linear", "", {{"in_features", int64_t(16)}, {"out_features", int64_t(10)}});
    spec.connect(flat, fc);
    NodeId out = spec.add_node("Output");
    spec.connect(fc, out);
    return spec;
}

} // namespace myelin::bench
