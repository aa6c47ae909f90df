#include "runs/runs_compare_data.h"

#include <myelin/error.h>
#include <myelin/store/run_store.h>
#include <myelin/train/recorded_run.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string_view>

namespace myelin::ui::compare {

namespace {

constexpr int kMaxLineageDepth = 64;
// Wall times of a bucketed part come from this many points read across it (two index seeks
// each), interpolated in between: buckets carry no times (readWallTimes).
constexpr int kWallTimeAnchors = 65;
constexpr int64_t kLastStep = std::numeric_limits<int64_t>::max();

std::string runName(int64_t run) {
    return "run " + std::to_string(run);
}

SeriesPart readPart(const store::RunStore& store, int64_t run, double startedAt,
                    const std::string& key, store::StepRange range, bool& downsampled) {
    SeriesPart part;
    part.run = run;
    part.startedAt = startedAt;
    if (range.first > range.last) return part;
    const auto buckets = store.metric_series_downsampled(run, key, range, kBuckets);
    int64_t total = 0;
    for (const auto& b : buckets)
        total += b.count;
    if (total == 0) return part;
    if (total <= kFullResolutionLimit) {
        const auto samples = store.metric_series(run, key, range);
        part.raw.reserve(samples.size());
        part.wallTimes.reserve(samples.size());
        for (const auto& s : samples) {
            part.raw.push_back({double(s.step), s.value});
            part.wallTimes.emplace_back(double(s.step), s.wall_time);
        }
        part.level = part.raw;
        return part;
    }
    downsampled = true;
    // Smoothing folds each bucket's last value (the series as seen at bucket ends), the way
    // TensorBoard smooths the points it sampled; raw keeps first, min, max and last of each
    // bucket so a spike inside one stays visible.
    part.raw.reserve(buckets.size() * 4);
    part.level.reserve(buckets.size());
    for (const auto& b : buckets) {
        part.raw.push_back({double(b.first_step), b.first});
        if (b.count > 2) {
            const double span = double(b.last_step - b.first_step);
            // Which of the two came first is not stored: min is drawn first, both inside.
            part.raw.push_back({b.first_step + span / 3, b.min});
            part.raw.push_back({b.first_step + 2 * span / 3, b.max});
        }
        if (b.count > 1) part.raw.push_back({double(b.last_step), b.last});
        part.level.push_back({double(b.last_step), b.last});
    }
    part.bucketed = true;
    return part;
}

void readPartWallTimes(const store::RunStore& store, SeriesPart& part, const std::string& key) {
    if (!part.bucketed || !part.wallTimes.empty() || part.raw.empty()) return;
    const int64_t first = int64_t(part.raw.front().step), last = int64_t(part.raw.back().step);
    for (int i = 0; i < kWallTimeAnchors; ++i) {
        const int64_t step = first + (last - first) * i / (kWallTimeAnchors - 1);
        const auto point = store.nearest_metric_point(part.run, key, step);
        if (!point) continue;
        if (part.wallTimes.empty() || double(point->step) > part.wallTimes.back().first)
            part.wallTimes.emplace_back(double(point->step), point->wall_time);
    }
}

double firstStep(const SeriesPart& part) {
    return part.raw.empty() ? std::numeric_limits<double>::infinity() : part.raw.front().step;
}

} // namespace

double interpolate(const Anchors& anchors, double x) {
    if (anchors.empty()) return std::nan("");
    if (anchors.size() == 1) return anchors.front().second;
    auto upper = std::upper_bound(anchors.begin(), anchors.end(), x,
                                  [](double v, const auto& a) { return v < a.first; });
    if (upper == anchors.begin()) ++upper;
    if (upper == anchors.end()) --upper;
    const auto& [x1, y1] = *upper;
    const auto& [x0, y0] = *(upper - 1);
    if (x1 == x0) return y1;
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0);
}

Lineage readLineage(const store::RunStore& store, int64_t run) {
    Lineage lineage;
    store::Run current = store.run(run);
    lineage.run = run;
    lineage.startedAt = current.started_at;
    std::set<int64_t> seen = {run};
    std::vector<Ancestor> newestFirst;
    for (int depth = 0; depth < kMaxLineageDepth; ++depth) {
        const auto params = store.params(current.id);
        std::optional<int64_t> parent, branch;
        if (const auto fork = params.find("fork.from"); fork != params.end()) {
            try {
                const train::ForkSource source = train::parse_fork_source(fork->second);
                parent = source.run;
                branch = source.step;
            } catch (const Error& e) {
                lineage.problems.push_back(runName(current.id) + ": " + e.what());
            }
        }
        if (!parent && current.parent_run) parent = *current.parent_run;
        if (!parent) break;
        if (seen.count(*parent)) {
            lineage.problems.push_back(runName(current.id) + "'s parent " + runName(*parent) +
                                       " is also its descendant; its history is cut there");
            break;
        }
        store::Run parentRun;
        try {
            parentRun = store.run(*parent);
        } catch (const store::StoreError& e) {
            if (std::string_view(e.what()).find("does not exist") == std::string_view::npos)
                throw; // not a missing run: the store cannot be read
            lineage.problems.push_back(runName(current.id) + "'s parent " + runName(*parent) +
                                       " is no longer in the store");
            break;
        }
        // A resume's branch: the step of its parent's checkpoint artifact (the store finds it).
        if (!branch) branch = current.branch_step;
        newestFirst.push_back({*parent, 0, branch.value_or(kLastStep), branch.has_value()});
        seen.insert(*parent);
        current = std::move(parentRun);
    }
    lineage.ancestors.assign(newestFirst.rbegin(), newestFirst.rend());
    for (size_t i = 1; i < lineage.ancestors.size(); ++i) {
        const Ancestor& before = lineage.ancestors[i - 1];
        lineage.ancestors[i].firstStep = before.branchKnown ? before.lastStep + 1 : 0;
    }
    return lineage;
}

bool LineageSeries::empty() const {
    if (!own.raw.empty()) return false;
    return std::all_of(history.begin(), history.end(),
                       [](const SeriesPart& part) { return part.raw.empty(); });
}

LineageSeries readSeries(const store::RunStore& store, const Lineage& lineage,
                         const std::string& key) {
    LineageSeries series;
    series.own = readPart(store, lineage.run, lineage.startedAt, key, {}, series.downsampled);
    // Newest first: an ancestor whose branch step is unknown ends before the next part begins.
    double floor = firstStep(series.own);
    std::vector<SeriesPart> newestFirst;
    for (auto it = lineage.ancestors.rbegin(); it != lineage.ancestors.rend(); ++it) {
        int64_t last = it->lastStep;
        if (!it->branchKnown) last = std::isfinite(floor) ? int64_t(floor) - 1 : kLastStep;
        double startedAt = 0;
        try {
            startedAt = store.run(it->run).started_at;
        } catch (const store::StoreError&) {
            continue; // deleted meanwhile
        }
        SeriesPart part =
            readPart(store, it->run, startedAt, key, {it->firstStep, last}, series.downsampled);
        floor = std::min(floor, part.raw.empty() ? double(it->firstStep) : firstStep(part));
        newestFirst.push_back(std::move(part));
    }
    series.history.assign(std::make_move_iterator(newestFirst.rbegin()),
                          std::make_move_iterator(newestFirst.rend()));
    return series;
}

void readWallTimes(const store::RunStore& store, LineageSeries& series, const std::string& key) {
    for (SeriesPart& part : series.history)
        readPartWallTimes(store, part, key);
    readPartWallTimes(store, series.own, key);
}

Anchors readEpochAnchors(const store::RunStore& store, const Lineage& lineage) {
    std::map<int64_t, double> epochs;
    int64_t floor = kLastStep;
    const auto add = [&](int64_t run, store::StepRange range) {
        const auto points = store.metric_series(run, "epoch", range);
        for (const auto& p : points)
            if (std::isfinite(p.value) && p.step < floor) epochs[p.step] = p.value;
        if (!points.empty()) floor = std::min(floor, points.front().step);
    };
    add(lineage.run, {});
    for (auto it = lineage.ancestors.rbegin(); it != lineage.ancestors.rend(); ++it)
        add(it->run, {it->firstStep, it->branchKnown ? it->lastStep : kLastStep});
    if (epochs.empty()) return {};
    Anchors anchors;
    if (epochs.begin()->first > 0) anchors.emplace_back(0.0, 0.0);
    for (const auto& [step, epoch] : epochs)
        anchors.emplace_back(double(step), epoch);
    return anchors;
}

std::vector<Anchors> elapsedSeconds(const LineageSeries& series) {
    std::vector<const SeriesPart*> parts;
    for (const auto& part : series.history)
        parts.push_back(&part);
    parts.push_back(&series.own);
    std::vector<Anchors> out;
    double offset = 0; // where the previous part's time ended
    for (const SeriesPart* part : parts) {
        Anchors anchors;
        anchors.reserve(part->wallTimes.size());
        for (const auto& [step, wall] : part->wallTimes)
            anchors.emplace_back(step, wall - part->startedAt + offset);
        if (!anchors.empty()) offset = anchors.back().second;
        out.push_back(std::move(anchors));
    }
    return out;
}

std::vector<ParamRow> paramRows(const std::vector<std::map<std::string, std::string>>& params) {
    std::set<std::string> keys;
    for (const auto& run : params)
        for (const auto& [key, value] : run)
            keys.insert(key);
    std::vector<ParamRow> rows;
    rows.reserve(keys.size());
    for (const std::string& key : keys) {
        ParamRow row{key, {}, false};
        for (const auto& run : params) {
            const auto it = run.find(key);
            row.values.push_back(it == run.end() ? std::nullopt
                                                 : std::optional<std::string>(it->second));
        }
        row.differs = std::adjacent_find(row.values.begin(), row.values.end(),
                                         std::not_equal_to<>()) != row.values.end();
        rows.push_back(std::move(row));
    }
    return rows;
}

} // namespace myelin::ui::compare
