#include "runs/runs_compare_plot.h"

#include "runs/smoothing.h"
#include "widgets/theme.h"

#include <qcustomplot.h>

#include <cmath>

namespace myelin::ui::compare {

namespace {

// Alpha of each curve of a run over the run's colour.
constexpr int kRawAlpha = 60;
constexpr int kHistoryAlpha = 105;
constexpr int kHistoryRawAlpha = 35;
// The line is 1.5 px, raw and history lines 1 px. Wider than 1 px, QCustomPlot's default of
// one stroke per segment made a replot of 10 runs x 1000-point lines take 70-90 ms; drawn as
// polylines (phFastPolylines, set up below) it takes 10-20 (bench/bench_runs_compare.cpp).
constexpr double kLineWidth = 1.5;

// Call after the range is set: wall time reads as seconds over a short span and as h:m:s over
// a long one (a time ticker over a few seconds labels nothing).
void setXTicker(QCPAxis* axis, XAxis x) {
    if (x == XAxis::WallTime && axis->range().size() > 300) {
        auto ticker = QSharedPointer<QCPAxisTickerTime>::create();
        ticker->setTimeFormat(QStringLiteral("%h:%m:%s"));
        axis->setTicker(ticker);
        axis->setLabel(QObject::tr("wall time since the run started (h:m:s)"));
        return;
    }
    if (!axis->ticker().dynamicCast<QCPAxisTickerTime>().isNull() ||
        !axis->ticker().dynamicCast<QCPAxisTickerText>().isNull())
        axis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    axis->setLabel(x == XAxis::WallTime ? QObject::tr("wall time since the run started (s)")
                   : x == XAxis::Epoch  ? QObject::tr("epoch")
                                        : QObject::tr("step"));
}

// Faint and dimmed curves go on this layer, under every run's line: a fork's inherited history
// lies on its parent's line when both are shown, and must not tint it.
const QString kBehindLayer = QStringLiteral("behind");

QCPGraph* addGraph(QCustomPlot* plot, const QColor& color, int alpha, double width,
                   const QVector<QCPGraphData>& points, bool sorted) {
    QCPGraph* graph = plot->addGraph();
    if (alpha < 255) graph->setLayer(kBehindLayer);
    QColor pen = color;
    pen.setAlpha(alpha);
    graph->setPen(QPen(pen, width));
    graph->data()->set(points, sorted);
    graph->removeFromLegend();
    return graph;
}

// Counts of what a run's curves left out.
struct LeftOut {
    int nonPositive = 0; // on a log axis
    int nonFinite = 0;
};

} // namespace

void setUpComparePlot(QCustomPlot* plot) {
    stylePlot(plot, {plot->xAxis, plot->yAxis});
    plot->addLayer(kBehindLayer, plot->layer(QStringLiteral("main")), QCustomPlot::limBelow);
    plot->setPlottingHint(QCP::phFastPolylines, true);
    // Room for "0.0001" and the axis label on the left (so the x axes of stacked plots line up)
    // and for the last x label on the right.
    plot->axisRect()->setMinimumMargins(QMargins(90, 12, 24, 12));
    plot->legend->setVisible(true);
    plot->legend->setBrush(QBrush(colors::kLegendBackground));
    plot->legend->setBorderPen(QPen(colors::kBorder));
    plot->legend->setFont(QFont(plot->font().family(), 8));
    plot->legend->setIconSize(16, 8);
    plot->legend->setRowSpacing(-2);
    plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    plot->axisRect()->setRangeDrag(Qt::Horizontal | Qt::Vertical);
    plot->axisRect()->setRangeZoom(Qt::Horizontal);
    plot->setToolTip(QObject::tr("Drag to move, wheel to zoom along x; double-click to fit; "
                                 "click a run in the legend to hide or show it"));
    QObject::connect(plot, &QCustomPlot::mouseDoubleClick, plot, [plot](QMouseEvent*) {
        plot->rescaleAxes(true);
        plot->replot();
    });
}

QStringList drawRuns(QCustomPlot* plot, const QString& key, const std::vector<RunCurves>& runs,
                     const PlotOptions& options, std::map<int64_t, DrawnRun>& drawn) {
    plot->clearGraphs();
    drawn.clear();
    plot->yAxis->setScaleType(options.logY ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (!options.logY) plot->yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
    plot->yAxis->setLabel(key);
    const bool smooth = options.smoothing > 0;
    QStringList notes;
    QStringList missing, noEpochs, logLeftOut, gaps;
    for (const RunCurves& run : runs) {
        const LineageSeries& series = *run.series;
        const QString name = QObject::tr("run %1").arg(run.run);
        if (series.empty()) {
            missing << name;
            continue;
        }
        if (options.x == XAxis::Epoch && (!run.epochs || run.epochs->empty())) {
            noEpochs << name;
            continue;
        }
        std::vector<const SeriesPart*> parts;
        for (const auto& part : series.history)
            parts.push_back(&part);
        parts.push_back(&series.own);
        const std::vector<Anchors> elapsed =
            options.x == XAxis::WallTime ? elapsedSeconds(series) : std::vector<Anchors>{};
        const auto xOf = [&](size_t part, double step) {
            switch (options.x) {
            case XAxis::Epoch:
                return interpolate(*run.epochs, step);
            case XAxis::WallTime:
                return interpolate(elapsed[part], step);
            case XAxis::Step:
                break;
            }
            return step;
        };
        // One EMA over the whole lineage, so a fork's smoothed line continues its parent's.
        std::vector<double> levels;
        for (const SeriesPart* part : parts)
            for (const SeriesPoint& p : part->level)
                levels.push_back(p.value);
        const std::vector<double> smoothed = debiasedEma(levels, options.smoothing);

        LeftOut leftOut;
        const auto add = [&](QVector<QCPGraphData>& to, double x, double value, bool count) {
            if (!std::isfinite(value)) {
                if (count) ++leftOut.nonFinite;
                if (!options.logY) to.append(QCPGraphData(x, std::nan(""))); // a gap
                return;
            }
            if (options.logY && value <= 0) {
                if (count) ++leftOut.nonPositive;
                return;
            }
            to.append(QCPGraphData(x, value));
        };
        QVector<QCPGraphData> historyLine, historyRaw, ownLine, ownRaw;
        size_t level = 0;
        for (size_t i = 0; i < parts.size(); ++i) {
            const bool own = i + 1 == parts.size();
            QVector<QCPGraphData>& line = own ? ownLine : historyLine;
            QVector<QCPGraphData>& raw = own ? ownRaw : historyRaw;
            for (const SeriesPoint& p : parts[i]->raw)
                add(smooth ? raw : line, xOf(i, p.step), p.value, true);
            for (const SeriesPoint& p : parts[i]->level) {
                if (smooth) add(line, xOf(i, p.step), smoothed[level], false);
                ++level;
            }
        }
        const bool sorted = options.x != XAxis::WallTime; // a clock may step back
        DrawnRun graphs;
        if (!historyLine.isEmpty()) {
            if (smooth)
                graphs.historyRaw =
                    addGraph(plot, run.color, kHistoryRawAlpha, 1, historyRaw, sorted);
            graphs.history = addGraph(plot, run.color, kHistoryAlpha, 1, historyLine, sorted);
            if (!ownLine.isEmpty())
                graphs.join = addGraph(plot, run.color, kHistoryAlpha, 1,
                                       {historyLine.back(), ownLine.front()}, false);
        }
        if (smooth) graphs.raw = addGraph(plot, run.color, kRawAlpha, 1, ownRaw, sorted);
        graphs.line = addGraph(plot, run.color, 255, kLineWidth, ownLine, sorted);
        graphs.line->setName(run.label);
        graphs.line->addToLegend();
        if (run.hidden) {
            for (QCPGraph* graph :
                 {graphs.line, graphs.raw, graphs.history, graphs.historyRaw, graphs.join})
                if (graph) graph->setVisible(false);
            if (auto* item = plot->legend->itemWithPlottable(graphs.line))
                item->setTextColor(colors::kBorder);
        }
        drawn[run.run] = graphs;
        if (leftOut.nonPositive)
            logLeftOut << QObject::tr("%1 in %2").arg(leftOut.nonPositive).arg(name);
        if (leftOut.nonFinite) gaps << QObject::tr("%1 in %2").arg(leftOut.nonFinite).arg(name);
    }
    for (const QString& name : missing)
        notes << QObject::tr("No series named %1 in %2.").arg(key, name);
    if (!noEpochs.isEmpty())
        notes << QObject::tr("Not shown with x as epoch (no epoch recorded yet): %1.")
                     .arg(noEpochs.join(QStringLiteral(", ")));
    if (!logLeftOut.isEmpty())
        notes << QObject::tr("Log y leaves out values ≤ 0: %1.")
                     .arg(logLeftOut.join(QStringLiteral(", ")));
    if (!gaps.isEmpty())
        notes << QObject::tr("NaN or infinite values, drawn as gaps: %1.")
                     .arg(gaps.join(QStringLiteral(", ")));

    if (!options.keepRanges) {
        plot->rescaleAxes(true);
        plot->yAxis->scaleRange(options.logY ? 1.1 : 1.08);
    }
    if (options.logY) setLogTicks(plot->yAxis);
    setXTicker(plot->xAxis, options.x);
    return notes;
}

QVector<QPointF> graphPoints(const QCPGraph* graph) {
    QVector<QPointF> points;
    if (!graph) return points;
    points.reserve(graph->data()->size());
    for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it)
        points.append(QPointF(it->key, it->value));
    return points;
}

} // namespace myelin::ui::compare
