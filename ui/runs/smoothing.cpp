#include "runs/smoothing.h"

#include <algorithm>
#include <cmath>

namespace myelin::ui {

std::vector<double> debiasedEma(std::span<const double> values, double weight) {
    std::vector<double> out(values.begin(), values.end());
    const double w = std::clamp(std::isfinite(weight) ? weight : 0.0, 0.0, kMaxSmoothingWeight);
    if (w == 0 || values.empty()) return out;
    const bool constant =
        std::all_of(values.begin(), values.end(), [&](double v) { return v == values.front(); });
    if (constant) return out;
    double last = 0;
    double weightPower = 1; // w^n, kept as a product (n can reach millions)
    for (double& v : out) {
        if (!std::isfinite(v)) continue; // passed through
        last = last * w + (1 - w) * v;
        weightPower *= w;
        v = last / (1 - weightPower);
    }
    return out;
}

} // namespace myelin::ui
