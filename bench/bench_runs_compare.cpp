// Comparing runs (issue 14, "Scale and speed": "overlay of 10 runs x 100k points each renders in
// < 50 ms"). Writes 10 runs of 100k loss points each (the 10th a fork of the 1st at step 50k,
// so its history is read too) into a store under /tmp, then times, in this process, with the
// view shown offscreen at 1280 x 820 and smoothing 0.6:
//   runs_compare_read        reading what setRuns reads (lineages + bucketed series), alone
//   runs_compare_set_runs    RunsCompareView::setRuns: reading + building the plot's curves
//   runs_compare_render      one replot of the plot (QCustomPlot::replot), median of 5
//   runs_compare_smoothing   a smoothing change (curves rebuilt from the read series) + replot
//   runs_compare_first_frame setRuns until the view's first frame is painted (QWidget::grab)
//
//   QT_QPA_PLATFORM=offscreen myelin_bench_runs_compare [--points N] [--store FILE]
// (--store FILE: write the runs there when FILE does not exist, else reuse it; default
// /tmp/myelin_bench_runs_compare-<N>.sqlite, kept for the next time.)
#include "bench_stats.h"
#include "runs/runs_compare_data.h"
#include "runs/runs_compare_view.h"

#include <myelin/store/run_store.h>

#include <qcustomplot.h>

#include <QApplication>
#include <QFileInfo>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace myelin;
using myelin::bench::median;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kRuns = 10;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void line(const char* workload, double value, const char* note) {
    std::printf("{\"workload\": \"%s\", \"myelin\": %.1f, \"unit\": \"ms\", \"note\": \"%s\"}\n",
                workload, value, note);
    std::fflush(stdout);
}

void write_runs(store::RunStore& runs, int64_t points) {
    const double start = 1.7e9;
    std::vector<store::MetricPoint> batch;
    for (int r = 0; r < kRuns; ++r) {
        const bool fork = r == kRuns - 1;
        const int64_t first = fork ? points / 2 + 1 : 0;
        const int64_t run =
            runs.create_run({.name = "run " + std::to_string(r + 1),
                             .parent_run = fork ? std::optional<int64_t>(1) : std::nullopt,
                             .started_at = start});
        if (fork) runs.set_params(run, {{"fork.from", "1@" + std::to_string(points / 2)}});
        uint32_t seed = 17u + uint32_t(r);
        for (int64_t step = first; step < points; ++step) {
            seed = seed * 1103515245u + 12345u;
            const double noise = double((seed >> 16) % 1000) / 1000.0 - 0.5;
            const double loss = (0.3 + 0.02 * r) + 2 * std::exp(-double(step) / (5000.0 + 900 * r));
            batch.push_back({run, "loss", step, loss * (1 + 0.3 * noise), start + step * 0.01});
            if (batch.size() == 20000) {
                runs.log_metrics(batch);
                batch.clear();
            }
        }
        runs.log_metrics(batch);
        batch.clear();
        runs.flush();
        runs.finish_run(run, store::RunStatus::Finished);
    }
}

} // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    int64_t points = 100'000;
    QString storePath;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--points")) points = std::atoll(argv[i + 1]);
        if (!std::strcmp(argv[i], "--store")) storePath = QString::fromLocal8Bit(argv[i + 1]);
    }
    if (storePath.isEmpty())
        storePath = QStringLiteral("/tmp/myelin_bench_runs_compare-%1.sqlite").arg(points);
    if (!QFileInfo::exists(storePath)) {
        const auto start = Clock::now();
        store::RunStore runs = store::RunStore::open(storePath.toStdString());
        write_runs(runs, points);
        std::fprintf(stderr, "wrote %d runs x %lld points into %s in %.1f s\n", kRuns,
                     static_cast<long long>(points), qPrintable(storePath), ms_since(start) / 1e3);
    }
    QList<qint64> ids;
    for (int r = 1; r <= kRuns; ++r)
        ids << r;

    {
        store::StoreOptions options;
        options.mark_interrupted_at_open = false;
        const store::RunStore runs = store::RunStore::open(storePath.toStdString(), options);
        std::vector<double> reads;
        for (int i = 0; i < 5; ++i) {
            const auto start = Clock::now();
            for (qint64 id : ids)
                (void)ui::compare::readSeries(runs, ui::compare::readLineage(runs, id), "loss");
            reads.push_back(ms_since(start));
        }
        line("runs_compare_read", median(reads), "10 runs: lineage + bucketed loss, median of 5");
    }

    ui::RunsCompareView view;
    view.resize(1280, 820);
    view.setStorePath(storePath);
    view.show();
    QApplication::processEvents();

    auto start = Clock::now();
    view.setRuns(ids);
    const double setRuns = ms_since(start);
    QApplication::processEvents();
    (void)view.grab();
    const double firstFrame = ms_since(start);
    QCustomPlot* plot = view.plot(QStringLiteral("loss"));
    if (!plot) {
        std::fprintf(stderr, "no loss plot: %s\n", qPrintable(view.message()));
        return 1;
    }
    std::vector<double> renders, smoothing;
    for (int i = 0; i < 5; ++i) {
        start = Clock::now();
        plot->replot(QCustomPlot::rpImmediateRefresh);
        renders.push_back(ms_since(start));
        start = Clock::now();
        view.setSmoothing(i % 2 ? 0.6 : 0.7);
        plot->replot(QCustomPlot::rpImmediateRefresh);
        smoothing.push_back(ms_since(start));
    }
    line("runs_compare_set_runs", setRuns, "read + curves built, cold (first open)");
    line("runs_compare_render", median(renders), "one replot of 10 runs; goal: < 50 ms");
    line("runs_compare_smoothing", median(smoothing), "curves rebuilt + replot, median of 5");
    line("runs_compare_first_frame", firstFrame, "setRuns until painted, cold");
    return 0;
}
