#pragma once
// Draws one series of several runs on a QCustomPlot for the runs comparison: per run the
// smoothed line in its colour over its raw points drawn faint, and a fork's or resume's
// inherited history (its ancestors' points up to the branch step) dimmed, joined to its own.
#include "runs/runs_compare_data.h"

#include <QColor>
#include <QPointF>
#include <QString>
#include <QStringList>
#include <QVector>

#include <cstdint>
#include <map>
#include <vector>

class QCPGraph;
class QCustomPlot;

namespace myelin::ui::compare {

enum class XAxis { Step, Epoch, WallTime };

// What a run's curves are drawn from.
struct RunCurves {
    int64_t run = 0;
    QString label; // legend text
    QColor color;
    const LineageSeries* series = nullptr;
    const Anchors* epochs = nullptr; // step -> epoch (needed for XAxis::Epoch)
    bool hidden = false;             // in the legend (greyed), its curves not drawn
};

struct PlotOptions {
    XAxis x = XAxis::Step;
    double smoothing = 0; // debiased EMA weight; 0: the raw line, nothing faint behind it
    bool logY = false;
    bool keepRanges = false; // leave the axes' ranges as they are (the person's zoom)
};

// The graphs of one run (null where it has none).
struct DrawnRun {
    QCPGraph* line = nullptr;       // smoothed (or raw at smoothing 0), its own points
    QCPGraph* raw = nullptr;        // faint, behind the line (smoothing > 0)
    QCPGraph* history = nullptr;    // dimmed: the ancestors' points up to the branch step
    QCPGraph* historyRaw = nullptr; // fainter still, behind it (smoothing > 0)
    QCPGraph* join = nullptr;       // dimmed, from the history's last point to the line's first
};

// The studio's look for a comparison plot (axes, legend, interactions); call once.
void setUpComparePlot(QCustomPlot* plot);

// Replaces the plot's graphs with the runs' curves of `key` and rescales its axes. Returns the
// notes to show under it: runs without the series, values left out of a log axis, runs with no
// epochs when x is the epoch, gaps for NaN or infinite values. `drawn` receives each run's
// graphs. Does not replot.
QStringList drawRuns(QCustomPlot* plot, const QString& key, const std::vector<RunCurves>& runs,
                     const PlotOptions& options, std::map<int64_t, DrawnRun>& drawn);

// The (x, y) points of a graph as drawn (empty for null).
QVector<QPointF> graphPoints(const QCPGraph* graph);

} // namespace myelin::ui::compare
