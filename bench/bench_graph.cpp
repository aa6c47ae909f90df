// Shape inference on every edit: analyze() of a 500-node graph (a chain of residual conv blocks
// with BatchNorm, ReLU and Add nodes), timed over many runs. Prints one JSON line per workload.
#include "graph_fixtures.h"

#include <myelin/graph/analysis.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using namespace myelin::graph;

int main() {
    ModelSpec spec = myelin::bench::residual_chain(500);
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
