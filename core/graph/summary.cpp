#include <myelin/graph/analysis.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace myelin::graph {

std::string format_count(int64_t value) {
    std::string digits = std::to_string(value < 0 ? -value : value);
    std::string out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return value < 0 ? "-" + out : out;
}

std::string format_si(double value, const char* unit) {
    static const char* prefixes[] = {"", " k", " M", " G", " T", " P"};
    int p = 0;
    while (std::abs(value) >= 1000 && p < 5) {
        value /= 1000;
        ++p;
    }
    char buffer[64];
    if (p == 0)
        std::snprintf(buffer, sizeof buffer, "%.0f%s%s", value, *unit ? " " : "", unit);
    else
        std::snprintf(buffer, sizeof buffer, "%.2f%s%s", value, prefixes[p], unit);
    return buffer;
}

std::string format_summary(const ModelSpec& spec, const Analysis& analysis) {
    struct Row {
        std::string name, kind, shape, params, flops;
    };
    std::vector<Row> rows;
    rows.push_back({"name", "kind", "output shape", "params", "FLOPs"});
    for (size_t i : analysis.order) {
        const Node& n = spec.nodes[i];
        const NodeInfo& info = analysis.nodes[i];
        std::string shape = info.output ? to_string(*info.output) : "?";
        if (info.outputs.size() > 1) { // the other output ports by name: "· h_n [1, 64]"
            const auto names = output_port_names(n);
            for (size_t p = 1; p < info.outputs.size() && p < names.size(); ++p)
                shape += " · " + names[p] + " " + to_string(info.outputs[p]);
        }
        if (!info.reachable) shape += " (unused)";
        std::string name = info.module_name.empty() ? spec.display_name(n.id) : info.module_name;
        rows.push_back({name + (n.frozen ? " (frozen)" : ""), n.kind, shape,
                        format_count(info.params), format_si(info.flops)});
    }
    size_t w[5] = {0, 0, 0, 0, 0};
    for (const Row& r : rows) {
        w[0] = std::max(w[0], r.name.size());
        w[1] = std::max(w[1], r.kind.size());
        w[2] = std::max(w[2], r.shape.size());
        w[3] = std::max(w[3], r.params.size());
        w[4] = std::max(w[4], r.flops.size());
    }
    auto pad = [](const std::string& s, size_t width, bool right) {
        std::string fill(width > s.size() ? width - s.size() : 0, ' ');
        return right ? fill + s : s + fill;
    };
    std::string out;
    for (size_t r = 0; r < rows.size(); ++r) {
        const Row& row = rows[r];
        out += pad(row.name, w[0], false) + "  " + pad(row.kind, w[1], false) + "  " +
               pad(row.shape, w[2], false) + "  " + pad(row.params, w[3], true) + "  " +
               pad(row.flops, w[4], true) + "\n";
        if (r == 0) out += std::string(w[0] + w[1] + w[2] + w[3] + w[4] + 8, '-') + "\n";
    }
    out += "\nbatch size " + std::to_string(analysis.batch_size) + ": " +
           format_count(analysis.total_params) + " parameters (" +
           format_count(analysis.trainable_params) + " trainable), " +
           format_si(analysis.total_flops, "FLOPs") + " per forward pass, " +
           format_si(double(analysis.total_activation_bytes), "B") + " of activations\n";
    if (!analysis.problems.empty()) {
        out += "\n" + std::to_string(analysis.error_count()) + " error(s), " +
               std::to_string(analysis.problems.size() - analysis.error_count()) + " warning(s):\n";
        for (const auto& p : analysis.problems)
            out += "  " + describe(spec, p) + "\n";
    }
    return out;
}

} // namespace myelin::graph
