#pragma once
// Which steps the Training page's learning-rate preview computes and plots. A short run: every
// step. A long one: a bounded number of them, so the preview costs the same for any epochs,
// T_max or warmup, yet keeps the schedule's shape: an even grid plus each corner of the curve
// (where a new piece of the schedule's formula starts: the warmup's end, StepLR's and
// MultiStepLR's drops, restarts, OneCycleLR's phases, ...: train::Schedule::next_corner) with
// the step before it, so a drop stays vertical and a peak exact. Plain C++.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace myelin::ui {

// The most points the preview plots (a plot is about 1000 pixels wide).
inline constexpr int64_t kMaxPreviewPoints = 2000;

// nextCorner(after): the first step s > after where the curve has a corner (those from the
// run's end on are ignored); nullopt when none is left.
using NextCorner = std::function<std::optional<int64_t>(int64_t after)>;

struct PreviewSampling {
    std::vector<int64_t> steps; // increasing, in [0, total), the first and the last included
    bool everyCorner = true;    // false: too many corners, one per grid cell kept
};

// The steps to compute of a run of `total` steps: all of them up to maxPoints (at least 6);
// beyond, at most maxPoints: when there are at most maxPoints / 3 corners, each of them and the
// step before it, and an even grid with the rest; otherwise a grid of maxPoints / 3 steps and
// each cell's first corner (with the step before it), which draws a dense staircase or sawtooth
// as its envelope instead of an alias of it.
PreviewSampling samplePreviewSteps(int64_t total, const NextCorner& nextCorner,
                                   int64_t maxPoints = kMaxPreviewPoints);

} // namespace myelin::ui
