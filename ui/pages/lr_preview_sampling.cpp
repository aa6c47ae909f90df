// The preview's steps: the corners of the built-in schedules, read from their typed options the
// way the kinds build them (spec/builtin_schedules.cpp, train::Schedule's warmup), and the
// bounded sampling around them.
#include "pages/lr_preview_sampling.h"

#include <myelin/optim/scheduler.h>
#include <myelin/spec/option_fields.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace myelin::ui {

namespace {

// The next multiple of `period` after `after` (both positive).
int64_t nextMultiple(int64_t after, int64_t period) {
    return (after / period + 1) * period;
}

// The corners of the kind itself, counted from its own step 0, over `steps` steps.
NextCorner kindCorners(const spec::Choice& c, int64_t steps) {
    using namespace optim;
    const std::string& kind = c.kind;
    if (kind == "StepLR") {
        const int64_t size =
            std::max<int64_t>(spec::read_options<StepLROptions>(c.options).step_size, 1);
        return
            [size](int64_t after) -> std::optional<int64_t> { return nextMultiple(after, size); };
    }
    if (kind == "MultiStepLR") {
        std::vector<int64_t> milestones =
            spec::read_options<MultiStepLROptions>(c.options).milestones;
        std::sort(milestones.begin(), milestones.end());
        return [milestones](int64_t after) -> std::optional<int64_t> {
            const auto it = std::upper_bound(milestones.begin(), milestones.end(), after);
            if (it == milestones.end()) return std::nullopt;
            return *it;
        };
    }
    if (kind == "CosineAnnealingLR") {
        // T_max 0 is the whole run (the kind fills it in); past T_max the cosine turns back up.
        const int64_t tMax = spec::read_options<CosineAnnealingLROptions>(c.options).T_max;
        const int64_t period = tMax > 0 ? tMax : std::max<int64_t>(steps, 1);
        return [period](int64_t after) -> std::optional<int64_t> {
            return nextMultiple(after, period);
        };
    }
    if (kind == "CosineAnnealingWarmRestarts") {
        const auto o = spec::read_options<CosineAnnealingWarmRestartsOptions>(c.options);
        const int64_t t0 = std::max<int64_t>(o.T_0, 1), mult = std::max<int64_t>(o.T_mult, 1);
        return [t0, mult](int64_t after) -> std::optional<int64_t> {
            if (mult == 1) return nextMultiple(after, t0);
            // Restarts at T_0, T_0 (1 + T_mult), ...: a few dozen before any run's end.
            constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
            int64_t start = t0, len = t0 * mult;
            while (start <= after) {
                if (len > kMax - start) return std::nullopt;
                start += len;
                len = len > kMax / mult ? kMax : len * mult;
            }
            return start;
        };
    }
    if (kind == "OneCycleLR") {
        // Phase i ends at its end_step (OneCycleLR's constructor); the next one starts after it.
        const auto o = spec::read_options<OneCycleOptions>(c.options);
        const double total = double(std::max<int64_t>(steps, 2)); // the kind's total_steps
        std::vector<double> ends = {o.pct_start * total - 1.0};
        if (o.three_phase) ends.push_back(2.0 * o.pct_start * total - 2.0);
        std::vector<int64_t> starts;
        for (double end : ends)
            starts.push_back(int64_t(std::floor(end)) + 1);
        return [starts](int64_t after) -> std::optional<int64_t> {
            for (int64_t s : starts)
                if (s > after) return s;
            return std::nullopt;
        };
    }
    if (kind == "LinearLR" || kind == "ConstantLR") {
        const int64_t iters = kind == "LinearLR"
                                  ? spec::read_options<LinearLROptions>(c.options).total_iters
                                  : spec::read_options<ConstantLROptions>(c.options).total_iters;
        return [iters](int64_t after) -> std::optional<int64_t> {
            if (iters > after) return iters;
            return std::nullopt;
        };
    }
    // ExponentialLR is one smooth piece; a plugin's pieces are not known.
    return [](int64_t) -> std::optional<int64_t> { return std::nullopt; };
}

} // namespace

NextCorner scheduleCorners(const spec::Choice& scheduler, int64_t steps) {
    // Every step-driven kind can start with a linear warmup: then the kind runs from step
    // `warmup` on, built for the steps left (train::Schedule).
    const int64_t warmup =
        std::max<int64_t>(spec::read_options<optim::WarmupOptions>(scheduler.options).warmup, 0);
    const NextCorner inner =
        kindCorners(scheduler, warmup > 0 ? std::max<int64_t>(steps - warmup, 1) : steps);
    return [inner, warmup, steps](int64_t after) -> std::optional<int64_t> {
        std::optional<int64_t> corner;
        if (warmup > 0 && after < warmup)
            corner = warmup;
        else if (const std::optional<int64_t> local = inner(after - warmup))
            corner = *local + warmup;
        if (!corner || *corner >= steps) return std::nullopt;
        return corner;
    };
}

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
