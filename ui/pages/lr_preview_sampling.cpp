// The preview's steps: a bounded sampling around the schedule's corners (which the schedule
// itself names: train::Schedule::next_corner).
#include "pages/lr_preview_sampling.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace myelin::ui {

PreviewSampling samplePreviewSteps(int64_t total, const NextCorner& nextCorner, int64_t maxPoints) {
    PreviewSampling out;
    if (total <= 0) return out;
    maxPoints = std::max<int64_t>(maxPoints, 6);
    if (total <= maxPoints) {
        out.steps.resize(size_t(total));
        for (int64_t s = 0; s < total; ++s)
            out.steps[size_t(s)] = s;
        return out;
    }
    // The corners while few enough to keep every one of them.
    std::vector<int64_t> corners;
    const size_t keepAll = size_t(maxPoints / 3);
    for (std::optional<int64_t> c = nextCorner(0); c && *c < total; c = nextCorner(*c)) {
        if (corners.size() == keepAll) {
            out.everyCorner = false;
            break;
        }
        corners.push_back(*c);
    }
    // An even grid from the first step to the last with the points the corners leave.
    const int64_t gridPoints =
        out.everyCorner ? maxPoints - 2 * int64_t(corners.size()) : maxPoints / 3;
    auto grid = [&](int64_t i) { return i * (total - 1) / (gridPoints - 1); };
    if (!out.everyCorner) {
        // Too many: the first corner in each cell of the grid.
        corners.clear();
        for (int64_t i = 0; i + 1 < gridPoints; ++i)
            if (const std::optional<int64_t> c = nextCorner(grid(i)); c && *c < grid(i + 1))
                corners.push_back(*c);
    }
    out.steps.reserve(size_t(gridPoints) + 2 * corners.size());
    for (int64_t i = 0; i < gridPoints; ++i)
        out.steps.push_back(grid(i));
    for (int64_t c : corners) {
        out.steps.push_back(c - 1); // the piece before the corner ends here
        out.steps.push_back(c);
    }
    std::sort(out.steps.begin(), out.steps.end());
    out.steps.erase(std::unique(out.steps.begin(), out.steps.end()), out.steps.end());
    return out;
}

} // namespace myelin::ui
