// Opening a long finished run in the inspection views (issue 13: "a finished run of 100k steps
// x 20 layers opens all views in < 300 ms"). Writes a store as the trainer would record such a
// run — per-layer gradient norm, weight norm and update ratio every step for the 10 Linear
// layers; activation mean/std/zeros/non-finite and activation + gradient histograms every 100
// steps for all 20 layers — then times, in this process, from asking each view to show the run
// until its first frame is painted (QWidget::grab, offscreen):
//   inspect_open_gradient_flow   GradientFlowView::showRun, cold (first open) and warm (median)
//   inspect_open_distributions   DistributionsView::showRun, the same
//   inspect_open_all             both, cold
//
//   QT_QPA_PLATFORM=offscreen myelin_bench_inspect_open [--steps N] [--store FILE]
// (--store FILE: write the run there when FILE does not exist, else reuse it: run 1 is the run.)
#include "inspect/distributions_view.h"
#include "inspect/gradient_flow_view.h"

#include <myelin/graph/model_spec.h>
#include <myelin/io/project.h>
#include <myelin/store/run_store.h>

#include <QApplication>
#include <QFileInfo>
#include <QTemporaryDir>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace myelin;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void line(const char* workload, double value, const char* note) {
    std::printf("{\"workload\": \"%s\", \"myelin\": %.1f, \"unit\": \"ms\", \"note\": \"%s\"}\n",
                workload, value, note);
    std::fflush(stdout);
}

// Input -> 10 x (Linear 64 -> ReLU) -> Output: 20 layers named l0 / r0 ... l9 / r9.
std::string project_json() {
    io::Project project;
    graph::ModelSpec& m = project.model;
    graph::NodeId prev = m.add_node("Input", "", {{"shape", std::vector<int64_t>{64}}});
    for (int i = 0; i < 10; ++i) {
        auto linear = m.add_node("Linear", "l" + std::to_string(i),
                                 {{"in_features", int64_t(64)}, {"out_features", int64_t(64)}});
        auto relu = m.add_node("ReLU", "r" + std::to_string(i));
        m.connect(prev, linear);
        m.connect(linear, relu);
        prev = relu;
    }
    m.connect(prev, m.add_node("Output"));
    return io::serialize_project(project);
}

void write_run(store::RunStore& runs, int64_t steps) {
    const int64_t run = runs.create_run({.name = "long", .project_json = project_json()});
    std::vector<store::MetricPoint> points;
    for (int64_t step = 1; step <= steps; ++step) {
        points.clear();
        const double t = double(step);
        for (int i = 0; i < 10; ++i) {
            const std::string l = "l" + std::to_string(i);
            const double wobble = 1 + 0.3 * std::sin(t / 97.0 + i);
            points.push_back({run, "grad_norm/" + l, step, 0.5 * wobble / std::sqrt(t), 0});
            points.push_back({run, "weight_norm/" + l, step, 8 + i + 1e-5 * t, 0});
            points.push_back({run, "update_ratio/" + l, step, 1e-3 * wobble, 0});
        }
        if (step % 100 == 0)
            for (int i = 0; i < 20; ++i) {
                const std::string l = (i % 2 ? "r" : "l") + std::to_string(i / 2);
                points.push_back({run, "activation_mean/" + l, step, 0.1 * i, 0});
                points.push_back({run, "activation_std/" + l, step, 1.0, 0});
                points.push_back({run, "activation_zero_fraction/" + l, step, i % 2 ? 0.5 : 0, 0});
                points.push_back({run, "activation_nonfinite/" + l, step, 0, 0});
                points.push_back({run, "gradient_nonfinite/" + l, step, 0, 0});
                std::vector<double> counts(64);
                for (int b = 0; b < 64; ++b)
                    counts[size_t(b)] = std::exp(-0.5 * std::pow((b - 32.0) / 8.0, 2)) * 1000;
                runs.log_histogram(run, "activation/" + l, step, -3, 3, counts);
                runs.log_histogram(run, "gradient/" + l, step, -1e-3, 1e-3, counts);
            }
        runs.log_metrics(points);
    }
    runs.flush();
    runs.finish_run(run, store::RunStatus::Finished);
}

// Shows `run` in `view` (through `show`) and paints it once; milliseconds.
template <typename View, typename Show> double time_open(View& view, Show&& show) {
    const auto start = Clock::now();
    show();
    QApplication::processEvents();
    (void)view.grab();
    return ms_since(start);
}

} // namespace

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    int64_t steps = 100'000;
    QString storePath;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--steps")) steps = std::atoll(argv[i + 1]);
        if (!std::strcmp(argv[i], "--store")) storePath = QString::fromLocal8Bit(argv[i + 1]);
    }
    QTemporaryDir dir;
    if (storePath.isEmpty()) storePath = dir.filePath(QStringLiteral("runs.sqlite"));
    if (!QFileInfo::exists(storePath)) {
        const auto start = Clock::now();
        store::RunStore runs = store::RunStore::open(storePath.toStdString());
        write_run(runs, steps);
        std::fprintf(stderr, "wrote %lld steps x 20 layers into %s in %.1f s\n",
                     static_cast<long long>(steps), qPrintable(storePath), ms_since(start) / 1e3);
    }

    ui::GradientFlowView flow;
    ui::DistributionsView distributions;
    for (QWidget* w : {static_cast<QWidget*>(&flow), static_cast<QWidget*>(&distributions)}) {
        w->resize(1280, 720);
        w->show();
    }
    QApplication::processEvents();
    // Opening the store shows its newest run (run 1) at once; reopening shows it again.
    const auto openFlow = [&] {
        return time_open(flow, [&] {
            if (flow.storePath() != storePath)
                flow.setStorePath(storePath);
            else
                flow.showRun(1, false);
        });
    };
    const auto openDistributions = [&] {
        return time_open(distributions, [&] { distributions.showRun(storePath, 1, false); });
    };
    const double flowCold = openFlow();
    const double distributionsCold = openDistributions();
    line("inspect_open_gradient_flow_cold", flowCold, "first open of the run");
    line("inspect_open_distributions_cold", distributionsCold, "first open of the run");
    line("inspect_open_all_cold", flowCold + distributionsCold, "goal: < 300 ms");
    std::vector<double> flowWarm, distributionsWarm;
    for (int i = 0; i < 5; ++i) {
        flow.showRun(-1, false); // forget it, so the next showRun reads it again
        flowWarm.push_back(openFlow());
        distributions.showRun(storePath, -1, false);
        distributionsWarm.push_back(openDistributions());
    }
    std::sort(flowWarm.begin(), flowWarm.end());
    std::sort(distributionsWarm.begin(), distributionsWarm.end());
    line("inspect_open_gradient_flow_warm", flowWarm[2], "median of 5 reopenings");
    line("inspect_open_distributions_warm", distributionsWarm[2], "median of 5 reopenings");
    return 0;
}
