// Shape inference on every edit: analyze() of a 500-node graph (a chain of residual conv blocks
// with BatchNorm, ReLU and Add nodes), timed over many runs. Prints one JSON line per workload.
#include <myelin/graph/analysis.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace myelin::graph;

namespace {

ModelSpec residual_chain(int target_nodes) {
    ModelSpec spec;
    NodeId x = spec.add_node("Input", "", {{"shape", std::vector<int64_t>{16, 32, 32}}});
    int block = 0;
    while (int(spec.nodes.size()) + 7 < target_nodes) {
        auto conv = [&](NodeId in) {
            NodeId c = spec.add_node("Conv2d", "",
                                     {{"in_channels", int64_t(16)}, {"out_channels", int64_t(16)},
                                      {"kernel_size", int64_t(3)}, {"padding", int64_t(1)}});
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
    NodeId fc = spec.add_node("Linear", "", {{"in_features", int64_t(16)}, {"out_features", int64_t(10)}});
    spec.connect(flat, fc);
    NodeId out = spec.add_node("Output");
    spec.connect(fc, out);
    return spec;
}

} // namespace

int main() {
    ModelSpec spec = residual_chain(500);
    Analysis a = analyze(spec, 128);
    if (!a.ok()) {
        std::fprintf(stderr, "bench_graph: the generated graph is invalid\n");
        return 1;
    }
    std::vector<double> times;
    for (int i = 0; i < 200; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        Analysis r = analyze(spec, 128);
        auto t1 = std::chrono::steady_clock::now();
        if (r.total_params != a.total_params) return 1;
        times.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(times.begin(), times.end());
    std::printf("{\"workload\": \"graph_analyze_%zu_nodes\", \"myelin\": %.1f, \"p90\": %.1f, "
                "\"unit\": \"us\", \"frame_budget_us\": 16667}\n",
                spec.nodes.size(), times[times.size() / 2], times[times.size() * 9 / 10]);
    return 0;
}
