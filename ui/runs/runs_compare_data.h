#pragma once
// What the runs comparison reads from the run store, apart from any widget: a run's lineage
// (the runs it was forked or resumed from, and where), one series of a run with its ancestors'
// history up to each branch step, the maps from steps to epochs and to wall time, and the
// parameter table of several runs.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace myelin::store {
class RunStore;
}

namespace myelin::ui::compare {

// A series with more points than this is read as min/max buckets (metric_series_downsampled)
// instead of point by point.
inline constexpr int64_t kFullResolutionLimit = 4000;
// Buckets per downsampled series: about one per pixel column of a wide plot.
inline constexpr int kBuckets = 1000;

// One point of a drawn series. `step` is fractional for the min and max of a bucket, which are
// drawn between its first and last step.
struct SeriesPoint {
    double step = 0;
    double value = 0;
};

// (x, y) anchors of a piecewise-linear map, x ascending.
using Anchors = std::vector<std::pair<double, double>>;

// y at x on the polyline through `anchors`, continued past both ends along the end segments
// (flat with a single anchor). NaN without anchors.
double interpolate(const Anchors& anchors, double x);

// A run that `run` continues: `run`'s history is this run's points with steps in
// [firstStep, lastStep] (lastStep: the branch step of its child in the chain).
struct Ancestor {
    int64_t run = 0;
    int64_t firstStep = 0;
    int64_t lastStep = 0;
    bool branchKnown = true; // false: lastStep is unknown (see readLineage)
};

struct Lineage {
    int64_t run = 0;
    double startedAt = 0;              // unix seconds
    std::vector<Ancestor> ancestors;   // oldest first; empty for a run started from scratch
    std::vector<std::string> problems; // a parent that is gone, a "fork.from" that is not valid
};

// The chain of runs `run` continues: its params' "fork.from" = "RUN@STEP", else its parent_run
// (a resume) branching at the store's branch_step (the step of its parent_checkpoint among the
// parent's artifacts; unknown: the parent's whole series up to the run's own first point).
// Recursive, for a fork of a fork; a cycle or a chain deeper than 64 ends it. Throws StoreError for
// an unknown run.
Lineage readLineage(const store::RunStore& store, int64_t run);

// One stretch of a lineage's series: the run's own points or one ancestor's history.
struct SeriesPart {
    int64_t run = 0;
    double startedAt = 0;           // that run's start (unix seconds)
    std::vector<SeriesPoint> raw;   // every point, or first / min / max / last of each bucket
    std::vector<SeriesPoint> level; // what smoothing folds: every point, or each bucket's last
    Anchors wallTimes;              // step -> unix seconds: every point, or see readWallTimes
    bool bucketed = false;          // raw and level come from buckets (no times)
};

struct LineageSeries {
    std::vector<SeriesPart> history; // oldest first, each ending at its child's branch step
    SeriesPart own;
    bool downsampled = false; // some part was read as buckets
    bool empty() const;       // no point in any part
};

// `key` of `lineage`'s run and its ancestors' history. An ancestor's range unknown (a resume
// whose checkpoint is not listed) ends before the run's first own point.
LineageSeries readSeries(const store::RunStore& store, const Lineage& lineage,
                         const std::string& key);

// Fills the wall times of the bucketed parts of `series` (read as `key`), when they have none:
// 65 points read across each part (two index seeks each), interpolated in between. Only the
// wall-time axis needs them, so they are not read with the series.
void readWallTimes(const store::RunStore& store, LineageSeries& series, const std::string& key);

// The step -> fractional epoch map of a lineage, from the "epoch" series (value k at the step
// that ended the k-th epoch) of its runs, with (0, 0) before the first. Empty when no run of
// the lineage recorded an epoch.
Anchors readEpochAnchors(const store::RunStore& store, const Lineage& lineage);

// Seconds since the lineage's first run started, for each step of each part: a part continues
// from where its ancestor's history ended (its own start is the branch point's time).
// Returns one Anchors (step -> seconds) per part, history parts first, then own.
std::vector<Anchors> elapsedSeconds(const LineageSeries& series);

// The parameter table: one row per key of any run, a value per run (unset where the run has no
// such parameter); a row differs when its values are not all the same (unset counts as a value).
struct ParamRow {
    std::string key;
    std::vector<std::optional<std::string>> values;
    bool differs = false;
};
std::vector<ParamRow> paramRows(const std::vector<std::map<std::string, std::string>>& params);

} // namespace myelin::ui::compare
