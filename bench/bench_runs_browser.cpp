// Opening the runs browser on a big store (issue 14: "1,000 runs and 10M metric points in the
// store opens in < 100 ms"). Writes the store once — 1,000 runs of 4,900 steps, each with loss
// and lr every step and train/val loss and accuracy every 100 steps (10.0M points); every 10th
// run a fork of the one before, every 25th a resume; tags and notes on some — then times:
//   runs_browser_open          RunsBrowser::setStorePath until the tree holds every run (the
//                              store opened, read and the model filled: runsLoaded), cold
//   runs_browser_open_gui_stall  the longest the GUI thread was away from its event loop then
//   runs_browser_refresh       refresh() until runsLoaded (a forced re-read), median of 5
//   runs_browser_paint         one paint of the filled browser (QWidget::grab)
//   store_list_runs, store_metric_ranges, store_data_version: the store reads it makes
//
//   QT_QPA_PLATFORM=offscreen myelin_bench_runs_browser [--store FILE]
// (default /tmp/myelin-bench-runs-browser/runs.sqlite; written when missing, else reused).
#include "bench_stats.h"
#include "runs/runs_browser.h"

#include <myelin/store/run_store.h>

#include <QApplication>
#include <QDir>
#include <QEventLoop>
#include <QFileInfo>
#include <QTimer>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace myelin;
using myelin::bench::median;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kRuns = 1000;
constexpr int64_t kSteps = 4900;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void line(const char* workload, double value, const char* note) {
    std::printf("{\"workload\": \"%s\", \"myelin\": %.2f, \"unit\": \"ms\", \"note\": \"%s\"}\n",
                workload, value, note);
    std::fflush(stdout);
}

int64_t write_store(store::RunStore& runs) {
    int64_t points_written = 0;
    std::vector<store::MetricPoint> points;
    int64_t previous = 0;
    const double start = 1.7e9;
    for (int r = 0; r < kRuns; ++r) {
        store::RunInfo info{.name = "run " + std::to_string(r), .device = "cpu", .threads = 8};
        info.started_at = start + r * 600.0;
        info.project_path = r % 3 ? "/projects/fashion.myelin" : "/projects/blobs.myelin";
        if (r % 10 == 9 || r % 25 == 24) info.parent_run = previous;
        const int64_t run = runs.create_run(info);
        if (r % 10 == 9) runs.set_params(run, {{"fork.from", std::to_string(previous) + "@2400"}});
        if (r % 7 == 0) runs.set_run_tags(run, {"sweep-" + std::to_string(r % 5), "baseline"});
        if (r % 11 == 0) runs.set_run_note(run, "note on run " + std::to_string(r));
        points.clear();
        const double scale = 200.0 + r % 50 * 10;
        for (int64_t s = 0; s < kSteps; ++s) {
            const double loss = 0.2 + 2.1 * std::exp(-double(s) / scale) + 0.02 * std::sin(s);
            points.push_back({run, "loss", s, loss, 0});
            points.push_back({run, "lr", s, 1e-3 * std::cos(double(s) / kSteps), 0});
            if (s % 100 == 99) {
                points.push_back({run, "train_loss", s, loss, 0});
                points.push_back({run, "train_accuracy", s, 1 - loss / 3, 0});
                points.push_back({run, "val_loss", s, loss + 0.05, 0});
                points.push_back({run, "val_accuracy", s, 0.97 - loss / 3, 0});
            }
        }
        runs.log_metrics(points);
        points_written += int64_t(points.size());
        runs.flush();
        runs.finish_run(run, r % 13 == 5 ? store::RunStatus::Failed : store::RunStatus::Finished);
        previous = run;
        if (r % 100 == 99) std::fprintf(stderr, "  %d runs written\n", r + 1);
    }
    return points_written;
}

// The longest the GUI thread did not get back to its event loop meanwhile (a 1 ms timer's
// largest gap; `start` itself included).
double gui_stall = 0;

// Runs `start` and the event loop until the browser says it loaded; milliseconds.
template <typename Start> double until_loaded(ui::RunsBrowser& browser, Start&& start) {
    QEventLoop loop;
    QObject::connect(&browser, &ui::RunsBrowser::runsLoaded, &loop, &QEventLoop::quit);
    QTimer::singleShot(60000, &loop, &QEventLoop::quit);
    QTimer ticker;
    auto last = Clock::now();
    gui_stall = 0;
    QObject::connect(&ticker, &QTimer::timeout, [&] {
        gui_stall = std::max(gui_stall, ms_since(last));
        last = Clock::now();
    });
    ticker.start(1);
    const auto begin = Clock::now();
    start();
    loop.exec();
    const double elapsed = ms_since(begin);
    gui_stall = std::max(gui_stall, ms_since(last));
    return elapsed;
}

} // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QString storePath = QStringLiteral("/tmp/myelin-bench-runs-browser/runs.sqlite");
    for (int i = 1; i + 1 < argc; i += 2)
        if (!std::strcmp(argv[i], "--store")) storePath = QString::fromLocal8Bit(argv[i + 1]);
    if (!QFileInfo::exists(storePath)) {
        QDir().mkpath(QFileInfo(storePath).absolutePath());
        const auto start = Clock::now();
        int64_t points = 0;
        {
            store::RunStore runs = store::RunStore::open(storePath.toStdString());
            points = write_store(runs);
        }
        std::fprintf(stderr, "wrote %d runs, %lld metric points into %s in %.1f s\n", kRuns,
                     static_cast<long long>(points), qPrintable(storePath), ms_since(start) / 1e3);
    }

    ui::RunsBrowser browser;
    browser.setProjectPath(QStringLiteral("/projects/fashion.myelin"));
    browser.resize(1600, 900);
    browser.show();
    QApplication::processEvents();
    line("runs_browser_open", until_loaded(browser, [&] { browser.setStorePath(storePath); }),
         "setStorePath until every run is in the tree; goal < 100 ms");
    line("runs_browser_open_gui_stall", gui_stall,
         "longest the GUI thread was busy meanwhile (filling the tree)");
    {
        const auto start = Clock::now();
        (void)browser.grab();
        line("runs_browser_paint", ms_since(start), "one paint of the filled browser");
    }
    std::vector<double> refreshes;
    for (int i = 0; i < 5; ++i)
        refreshes.push_back(until_loaded(browser, [&] { browser.refresh(); }));
    line("runs_browser_refresh", median(refreshes), "forced re-read, median of 5");

    store::StoreOptions options;
    options.mark_interrupted_at_open = false;
    auto start = Clock::now();
    store::RunStore runs = store::RunStore::open(storePath.toStdString(), options);
    line("store_open", ms_since(start), "a second connection");
    std::vector<double> lists, ranges, versions;
    size_t listed = 0;
    for (int i = 0; i < 5; ++i) {
        start = Clock::now();
        listed = runs.list_runs().size();
        lists.push_back(ms_since(start));
        start = Clock::now();
        for (const char* key : {"loss", "val_loss", "val_accuracy"})
            (void)runs.metric_ranges(key);
        ranges.push_back(ms_since(start));
        start = Clock::now();
        (void)runs.data_version();
        versions.push_back(ms_since(start));
    }
    line("store_list_runs", median(lists), "list_runs of every run, median of 5");
    line("store_metric_ranges", median(ranges), "best values of 3 keys for every run, median");
    line("store_data_version", median(versions), "the check made every second, median");
    std::fprintf(stderr, "%zu runs listed\n", listed);
    return 0;
}
