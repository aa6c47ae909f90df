// The editor's responsiveness on a 500-node graph: one attribute edit through the undo stack —
// shape inference over the whole graph, the scene brought up to date, and the view repainted —
// timed end to end, as a person editing in the inspector would wait for it; then the same for
// undo. The canvas is fitted to the window, so every node is painted (the worst case). Runs
// offscreen unless QT_QPA_PLATFORM says otherwise. Prints one JSON line per workload.
#include "graph_fixtures.h"

#include "document/model_edits.h"
#include "document/project_document.h"
#include "editor/graph_view.h"
#include "editor/model_editor.h"

#include <myelin/io/project.h>

#include <QApplication>
#include <QUndoStack>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

struct Stats {
    double median = 0, p90 = 0, max = 0;
};

Stats summarize(std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    return {ms[ms.size() / 2], ms[ms.size() * 9 / 10], ms.back()};
}

void print(const char* workload, size_t nodes, const Stats& s) {
    std::printf("{\"workload\": \"%s_%zu_nodes\", \"myelin\": %.2f, \"p90\": %.2f, \"max\": %.2f, "
                "\"unit\": \"ms\", \"frame_budget_ms\": 16.7}\n",
                workload, nodes, s.median, s.p90, s.max);
}

} // namespace

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    using namespace myelin;

    io::Project project;
    project.name = "bench";
    project.model = bench::residual_chain(500);
    ui::arrangeLayers(project.model);
    ui::ProjectDocument document;
    document.open(project, QString());
    ui::ModelEditor editor(&document);
    editor.resize(1280, 800);
    editor.show();
    QApplication::processEvents();
    editor.fitToWindow();
    QApplication::processEvents();

    // The edit: a middle Conv2d's kernel_size between 3 and 5 (with padding 1, 5 shrinks the
    // feature map, so the block's Add reports a shape error and the labels downstream change).
    graph::NodeId target = -1;
    int convs = 0;
    for (const graph::Node& n : document.spec().nodes)
        if (n.kind == "Conv2d" && ++convs == 60) target = n.id;
    if (target < 0) {
        std::fprintf(stderr, "bench_editor: no Conv2d to edit\n");
        return 1;
    }
    using Clock = std::chrono::steady_clock;
    auto elapsedMs = [](Clock::time_point t0) {
        return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    };
    std::vector<double> edits, undos;
    for (int i = 0; i < 60; ++i) {
        graph::ModelSpec spec = document.spec();
        spec.node(target).attrs.set("kernel_size", int64_t(i % 2 == 0 ? 5 : 3));
        const auto t0 = Clock::now();
        document.applyEdit(spec, QStringLiteral("Change kernel_size"));
        editor.view()->viewport()->repaint();
        edits.push_back(elapsedMs(t0));
        QApplication::processEvents();
    }
    for (int i = 0; i < 60; ++i) {
        const auto t0 = Clock::now();
        document.undoStack()->undo();
        editor.view()->viewport()->repaint();
        undos.push_back(elapsedMs(t0));
        QApplication::processEvents();
    }
    print("editor_edit", document.spec().nodes.size(), summarize(edits));
    print("editor_undo", document.spec().nodes.size(), summarize(undos));
    return 0;
}
