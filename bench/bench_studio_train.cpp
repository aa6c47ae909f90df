// What a person meets pressing Train in the studio: the main window trains a project for a fixed
// number of optimizer steps on its worker thread, the live dock plotting, with the chosen tab in
// front — the Model canvas (badges only), Gradient Flow or Distributions, whose views read the
// run store while it trains — and capture at the project's settings. Prints one JSON line: the
// training throughput the run reported, the wall time, and the GUI thread's event-loop latency
// (how late a 5 ms timer fires: p50, p99, max), the measure of a UI that never blocks.
//
//   myelin_bench_studio_train PROJECT STEPS [model|gradient-flow|distributions|feature-maps]
//                             [no-probe]
//
// no-probe: without the latency timer (200 wake-ups a second of the GUI thread, which a user's
// studio does not have), for the throughput comparison with the CLI (bench/train_studio.py).
//
// Runs offscreen unless QT_QPA_PLATFORM says otherwise. Time two tabs against each other with
// farm-bench (docs/performance.md); the store is a fresh temporary file each run.
#include "document/project_document.h"
#include "inspect/distributions_view.h"
#include "inspect/feature_maps_view.h"
#include "inspect/gradient_flow_view.h"
#include "shell/main_window.h"
#include "training/training_controller.h"

#include <QApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTimer>

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s PROJECT STEPS [model|gradient-flow|distributions|feature-maps] [no-probe]\n",
                     argv[0]);
        return 2;
    }
    const QString project = QString::fromLocal8Bit(argv[1]);
    const int64_t steps = std::atoll(argv[2]);
    const QString tab = argc > 3 ? QString::fromLocal8Bit(argv[3]) : QStringLiteral("model");
    const bool latencyProbe = !(argc > 4 && QLatin1String(argv[4]) == QLatin1String("no-probe"));
    QTemporaryDir dir;
    qputenv("XDG_CONFIG_HOME", dir.filePath(QStringLiteral("config")).toUtf8());

    myelin::ui::MainWindow w;
    w.trainingController()->setStorePath(dir.filePath(QStringLiteral("runs.sqlite")));
    w.resize(1400, 900);
    w.show();
    if (!w.openProject(project)) {
        std::fprintf(stderr, "cannot open %s\n", argv[1]);
        return 1;
    }
    auto* tabs = w.findChild<QTabWidget*>(QStringLiteral("workspaceTabs"));
    if (tab == QLatin1String("gradient-flow")) tabs->setCurrentWidget(w.gradientFlowView());
    if (tab == QLatin1String("distributions")) tabs->setCurrentWidget(w.distributionsView());
    if (tab == QLatin1String("feature-maps")) tabs->setCurrentWidget(w.featureMapsView());

    // Event-loop latency: how late a 5 ms timer fires while the run goes.
    std::vector<double> lateness;
    QElapsedTimer clock;
    QTimer probe;
    probe.setTimerType(Qt::PreciseTimer);
    probe.setInterval(5);
    double last = 0;
    QObject::connect(&probe, &QTimer::timeout, [&] {
        const double now = double(clock.nsecsElapsed()) / 1e6;
        if (last > 0) lateness.push_back(std::max(0.0, now - last - 5.0));
        last = now;
    });

    double samplesPerSecond = 0;
    QObject::connect(w.trainingController(), &myelin::ui::TrainingController::progressChanged,
                     [&](const myelin::train::Progress& p) {
                         if (p.samples_per_second > 0) samplesPerSecond = p.samples_per_second;
                     });
    // Throughput from the steps seen and the time between the first and the last (the reported
    // figure is an average over the last few steps only).
    int64_t firstStep = -1, lastStep = -1;
    double firstAt = 0, lastAt = 0;
    QObject::connect(w.trainingController(), &myelin::ui::TrainingController::stepMetrics,
                     [&](const myelin::train::StepMetrics& m) {
                         const double now = double(clock.nsecsElapsed()) / 1e9;
                         if (firstStep < 0) firstStep = m.step, firstAt = now;
                         lastStep = m.step, lastAt = now;
                     });
    QEventLoop loop;
    QObject::connect(w.trainingController(), &myelin::ui::TrainingController::finished, &loop,
                     &QEventLoop::quit);
    myelin::ui::TrainingStartOptions options;
    options.maxSteps = steps;
    clock.start();
    if (latencyProbe) probe.start();
    if (!w.trainingController()->start(w.document()->project(), w.document()->dataDirectory(),
                                       options))
        return 1;
    loop.exec();
    probe.stop();
    const double wall = double(clock.nsecsElapsed()) / 1e9;
    // CPU the GUI thread spent while the run went: every millisecond of it is taken from the
    // training threads on a machine with as many cores as compute threads.
    rusage usage{};
    getrusage(RUSAGE_THREAD, &usage);
    const double guiCpu = double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                          double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    const double batch = double(w.document()->project().data.batch_size);
    const double averageSamplesPerSecond =
        lastAt > firstAt ? double(lastStep - firstStep) * batch / (lastAt - firstAt) : 0.0;
    std::sort(lateness.begin(), lateness.end());
    const auto at = [&](double q) {
        return lateness.empty() ? 0.0 : lateness[size_t(q * double(lateness.size() - 1))];
    };
    std::printf("{\"workload\": \"studio_train\", \"tab\": \"%s\", \"steps\": %lld, "
                "\"samples_per_second\": %.1f, \"last_samples_per_second\": %.1f, \"wall_s\": %.2f, \"loop_late_ms_p50\": %.2f, "
                "\"loop_late_ms_p99\": %.2f, \"loop_late_ms_max\": %.2f, \"gui_cpu_s\": %.2f, \"gui_wakeups\": %ld}\n",
                qPrintable(tab), (long long)steps, averageSamplesPerSecond, samplesPerSecond, wall, at(0.5), at(0.99),
                lateness.empty() ? 0.0 : lateness.back(), guiCpu, usage.ru_nvcsw);
    return 0;
}
