#include "document/graph_layout.h"

#include <QRectF>

#include <algorithm>
#include <cmath>
#include <optional>
#include <queue>
#include <unordered_map>
#include <unordered_set>

namespace myelin::ui {

using graph::Edge;
using graph::ModelSpec;
using graph::Node;
using graph::NodeId;

double snapToGrid(double value) {
    return std::round(value / geometry::kGrid) * geometry::kGrid;
}

void arrangeLayers(ModelSpec& spec) {
    const size_t n = spec.nodes.size();
    if (n == 0) return;
    std::unordered_map<NodeId, size_t> index;
    for (size_t i = 0; i < n; ++i)
        index.emplace(spec.nodes[i].id, i);

    // Stable topological order; nodes on cycles follow in model order.
    std::vector<std::vector<size_t>> preds(n), succs(n);
    std::vector<std::pair<size_t, size_t>> links;
    // Where along its source's card each link leaves, in slots (-0.4 .. 0.4; 0 for one output
    // port), so consumers of an LSTM's output, h_n and c_n line up with those ports.
    std::vector<double> portOffsets;
    for (const Edge& e : spec.edges) {
        auto f = index.find(e.from), t = index.find(e.to);
        if (f == index.end() || t == index.end() || f->second == t->second) continue;
        links.emplace_back(f->second, t->second);
        const size_t ports =
            std::max<size_t>(1, graph::output_port_names(spec.nodes[f->second]).size());
        portOffsets.push_back(0.8 * ((double(e.from_port) + 1) / double(ports + 1) - 0.5));
    }
    std::vector<int> pending(n, 0);
    for (auto [f, t] : links) {
        succs[f].push_back(t);
        preds[t].push_back(f);
        ++pending[t];
    }
    std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
    for (size_t i = 0; i < n; ++i)
        if (pending[i] == 0) ready.push(i);
    std::vector<size_t> order;
    std::vector<bool> placed(n, false);
    while (!ready.empty()) {
        size_t i = ready.top();
        ready.pop();
        order.push_back(i);
        placed[i] = true;
        for (size_t s : succs[i])
            if (--pending[s] == 0) ready.push(s);
    }
    for (size_t i = 0; i < n; ++i)
        if (!placed[i]) order.push_back(i);
    std::vector<size_t> rank(n);
    for (size_t k = 0; k < n; ++k)
        rank[order[k]] = k;

    // Longest-path layers over forward edges (back edges of a cycle are ignored).
    std::vector<int> layer(n, 0);
    for (size_t i : order)
        for (size_t s : succs[i])
            if (rank[s] > rank[i]) layer[s] = std::max(layer[s], layer[i] + 1);
    // Sources sit just above their first consumer (a second input joins where it is used).
    for (size_t i = 0; i < n; ++i) {
        bool source = std::none_of(preds[i].begin(), preds[i].end(),
                                   [&](size_t p) { return rank[p] < rank[i]; });
        int first = INT32_MAX;
        for (size_t s : succs[i])
            if (rank[s] > rank[i]) first = std::min(first, layer[s]);
        if (source && first != INT32_MAX) layer[i] = std::max(0, first - 1);
    }

    // Vertices: the nodes, then one dummy per layer a long edge crosses.
    struct Vertex {
        int layer = 0;
        bool real = true;
        double x = 0;
        double key = 0;
        std::vector<size_t> up, down;
        std::vector<double> upOffsets; // parallel to up: the port offset of each link
    };
    std::vector<Vertex> vs(n);
    for (size_t i = 0; i < n; ++i) {
        vs[i].layer = layer[i];
        vs[i].x = spec.nodes[i].x;
    }
    auto link = [&vs](size_t a, size_t b, double offset) {
        vs[a].down.push_back(b);
        vs[b].up.push_back(a);
        vs[b].upOffsets.push_back(offset);
    };
    for (size_t k = 0; k < links.size(); ++k) {
        const auto [f, t] = links[k];
        if (layer[t] <= layer[f]) continue;
        size_t previous = f;
        for (int l = layer[f] + 1; l < layer[t]; ++l) {
            Vertex dummy;
            dummy.layer = l;
            dummy.real = false;
            dummy.x = (spec.nodes[f].x + spec.nodes[t].x) / 2;
            vs.push_back(dummy);
            link(previous, vs.size() - 1, portOffsets[k]);
            previous = vs.size() - 1;
        }
        link(previous, t, portOffsets[k]);
    }
    int layerCount = 0;
    for (const Vertex& v : vs)
        layerCount = std::max(layerCount, v.layer + 1);
    std::vector<std::vector<size_t>> layers(static_cast<size_t>(layerCount));
    for (size_t v = 0; v < vs.size(); ++v)
        layers[size_t(vs[v].layer)].push_back(v);
    // Start from the current left-to-right order, so a layout the person arranged is respected.
    for (auto& row : layers)
        std::stable_sort(row.begin(), row.end(),
                         [&vs](size_t a, size_t b) { return vs[a].x < vs[b].x; });

    // Order within layers: barycenter sweeps down and up.
    std::vector<double> slot(vs.size(), 0);
    auto numberSlots = [&](const std::vector<size_t>& row) {
        for (size_t k = 0; k < row.size(); ++k)
            slot[row[k]] = double(k);
    };
    for (const auto& row : layers)
        numberSlots(row);
    auto sortByBarycenter = [&](std::vector<size_t>& row, bool useUp) {
        for (size_t v : row) {
            const auto& neighbours = useUp ? vs[v].up : vs[v].down;
            if (neighbours.empty()) {
                vs[v].key = slot[v];
                continue;
            }
            double sum = 0;
            for (size_t k = 0; k < neighbours.size(); ++k)
                sum += slot[neighbours[k]] + (useUp ? vs[v].upOffsets[k] : 0.0);
            vs[v].key = sum / double(neighbours.size());
        }
        std::stable_sort(row.begin(), row.end(),
                         [&vs](size_t a, size_t b) { return vs[a].key < vs[b].key; });
        numberSlots(row);
    };
    for (int sweep = 0; sweep < 6; ++sweep) {
        for (int l = 1; l < layerCount; ++l)
            sortByBarycenter(layers[size_t(l)], true);
        for (int l = layerCount - 2; l >= 0; --l)
            sortByBarycenter(layers[size_t(l)], false);
    }

    // x: each vertex pulled towards its neighbours' mean, keeping order and separation.
    constexpr double kGap = 40;
    auto halfWidth = [&vs](size_t v) { return vs[v].real ? geometry::kNodeWidth / 2 : 0.0; };
    auto separation = [&](size_t a, size_t b) { return halfWidth(a) + halfWidth(b) + kGap; };
    for (auto& row : layers) {
        double width = 0;
        for (size_t k = 1; k < row.size(); ++k)
            width += separation(row[k - 1], row[k]);
        double x = -width / 2;
        for (size_t k = 0; k < row.size(); ++k) {
            if (k > 0) x += separation(row[k - 1], row[k]);
            vs[row[k]].x = x;
        }
    }
    auto place = [&](std::vector<size_t>& row, bool useUp) {
        const size_t m = row.size();
        if (m == 0) return;
        std::vector<double> desired(m), left(m), right(m);
        for (size_t k = 0; k < m; ++k) {
            // Real neighbours decide where a node goes, so a chain stays one straight column and
            // the long edges beside it bend around it; dummies follow their edge.
            const auto& neighbours = useUp ? vs[row[k]].up : vs[row[k]].down;
            double sum = 0, count = 0;
            for (int pass = 0; pass < 2 && count == 0; ++pass)
                for (size_t u : neighbours)
                    if (pass == 1 || vs[u].real || !vs[row[k]].real) {
                        sum += vs[u].x;
                        ++count;
                    }
            desired[k] = count == 0 ? vs[row[k]].x : sum / count;
        }
        left[0] = desired[0];
        for (size_t k = 1; k < m; ++k)
            left[k] = std::max(desired[k], left[k - 1] + separation(row[k - 1], row[k]));
        right[m - 1] = desired[m - 1];
        for (size_t k = m - 1; k-- > 0;)
            right[k] = std::min(desired[k], right[k + 1] - separation(row[k], row[k + 1]));
        for (size_t k = 0; k < m; ++k)
            vs[row[k]].x = (left[k] + right[k]) / 2;
    };
    for (int pass = 0; pass < 4; ++pass) {
        for (int l = 1; l < layerCount; ++l)
            place(layers[size_t(l)], true);
        for (int l = layerCount - 2; l >= 0; --l)
            place(layers[size_t(l)], false);
    }

    double shift = 0;
    if (!layers.empty() && !layers[0].empty()) {
        for (size_t v : layers[0])
            shift += vs[v].x;
        shift /= double(layers[0].size());
    }
    for (size_t i = 0; i < n; ++i) {
        spec.nodes[i].x = snapToGrid(vs[i].x - shift - geometry::kNodeWidth / 2);
        spec.nodes[i].y = double(layer[i]) * geometry::kLayerPitch;
    }
}

bool layoutNeedsArranging(const ModelSpec& spec) {
    using namespace geometry;
    auto rectOf = [](const Node& n) { return QRectF(n.x, n.y, kNodeWidth, kNodeHeight); };
    for (size_t i = 0; i < spec.nodes.size(); ++i)
        for (size_t j = i + 1; j < spec.nodes.size(); ++j)
            if (rectOf(spec.nodes[i]).intersects(rectOf(spec.nodes[j]))) return true;
    return false;
}

} // namespace myelin::ui
