// The Gradient through Time view, offscreen, on runs recorded by the trainer: the word-language
// LSTM example (on two tiny word lists) with the probe every step shows the stored norms per
// direction against the time step, moves between steps, switches the log axis; a run of a model
// without recurrent layers hides the view's tab in the main window.
#include "inspect/gradient_flow_view.h"
#include "inspect/time_gradients_view.h"
#include "shell/main_window.h"
#include "ui_test_support.h"

#include <myelin/io/project.h>
#include <myelin/store/run_store.h>
#include <myelin/train/store_sink.h>
#include <myelin/train/trainer.h>

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

using myelin::ui::MainWindow;
using myelin::ui::TimeGradientsView;
namespace io = myelin::io;
namespace store = myelin::store;
namespace train = myelin::train;

namespace {

// The word-language LSTM example on two small word lists, the probe every `every` steps.
io::Project wordLanguage(const std::string& dir, int every) {
    // Long words: the probe's sequences cover most of the 24 steps.
    std::ofstream(dir + "/a") << "pomegranatejuices\nelderberrybushes\nhoneydewmelonrind\n"
                                 "watermelonseedling\nnectarineorchards\ngrapefruitsegments\n"
                                 "blackcurrantjam\ncantaloupeslices\npassionfruitpulp\n"
                                 "strawberryfields\nraspberrycanes\nmandarinorange\n";
    std::ofstream(dir + "/b") << "zzyzxqwopxyzzyplugh\nfrotzgnustorezrov\nyominblorbwazzo\n"
                                 "krebfthrottlewhipx\nxuzzlequizzovexbo\nqaxzuvwyykkjjhh\n"
                                 "zyxwvutsrqponmlk\nqqqzzzxxxjjjkkkvv\nwxyzzyxwqpqpqp\n"
                                 "jjjqqqzzzxxxkkk\nvvvwwwxxxyyyzzz\nkzkzkzqxqxqxjvj\n";
    std::ifstream in(myelin::test::examplePath("word_language_lstm").toStdString());
    std::stringstream text;
    text << in.rdbuf();
    std::string json = text.str();
    auto replace = [&](const std::string& from, const std::string& to) {
        const size_t at = json.find(from);
        if (at != std::string::npos) json.replace(at, from.size(), to);
    };
    const size_t classes = json.find("\"classes\": \"");
    json.replace(classes, json.find('"', classes + 12) + 1 - classes, "\"classes\": \"A=a, B=b\"");
    replace("\"batch_size\": 64", "\"batch_size\": 4");
    replace("\"feature_maps_every\": 500", "\"feature_maps_every\": " + std::to_string(every));
    replace("\"summaries_every\": 100", "\"summaries_every\": 0");
    replace("\"out_features\": 8", "\"out_features\": 2");
    return io::parse_project(json);
}

// Trains `project` for `steps` steps into the store at `path`; returns the run id.
int64_t record(const io::Project& project, const std::string& dir, const std::string& path,
               int steps) {
    train::TrainerOptions options;
    options.project_dir = dir;
    options.max_steps = steps;
    options.run_name = project.name;
    store::RunStore s = store::RunStore::open(path);
    const int64_t run = s.create_run(train::run_info(project, options));
    train::Trainer trainer(project, options);
    train::StoreSink sink(s, run);
    trainer.set_sink(&sink);
    trainer.run();
    s.flush();
    return run;
}

QTabWidget* workspaceTabs(MainWindow& w) {
    return w.findChild<QTabWidget*>(QStringLiteral("workspaceTabs"));
}

} // namespace

class TestTimeGradientsView : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() { myelin::test::isolateStudioSettings(home_); }

    void showsTheStoredNorms() {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        const std::string path = d + "/runs.sqlite";
        const int64_t run = record(wordLanguage(d, 4), d, path, 40);
        store::RunStore s = store::RunStore::open(path);
        QCOMPARE(s.time_gradient_layers(run), std::vector<std::string>{"2"}); // the LSTM node
        QCOMPARE(s.time_gradient_steps(run, "2").size(), size_t(10));

        TimeGradientsView view;
        QSignalSpy available(&view, &TimeGradientsView::availabilityChanged);
        view.resize(1100, 720);
        view.show();
        view.showRun(QString::fromStdString(path), run, false);
        QVERIFY(view.available());
        QCOMPARE(available.count(), 1);
        QVERIFY(view.message().isEmpty());
        QCOMPARE(view.layers(), std::vector<std::string>{"2"});
        auto* layerBox = view.findChild<QComboBox*>(QStringLiteral("timeGradientsLayer"));
        QVERIFY(layerBox);
        QCOMPARE(layerBox->currentText(), QStringLiteral("2 (LSTM)"));
        QCOMPARE(view.steps().size(), size_t(10));
        QCOMPARE(view.shownStep().value_or(-1), int64_t(40)); // the newest
        // Both directions of the bidirectional LSTM, as stored.
        const auto stored = s.time_gradients(run, "2", 40);
        QCOMPARE(view.shownSeries().size(), size_t(2));
        QCOMPARE(view.shownSeries()[1].norms, stored[1].norms);
        QCOMPARE(view.plot()->graphCount(), 2);
        QCOMPARE(view.plot()->graph(0)->name(), QStringLiteral("forward"));
        QCOMPARE(view.plot()->graph(1)->name(), QStringLiteral("reverse"));
        // On the log axis the steps padded in every probe word (norm 0) are left out.
        int positive = 0;
        for (double v : stored[0].norms)
            positive += v > 0;
        QCOMPARE(view.plot()->graph(0)->dataCount(), positive);
        QVERIFY(positive > 3 && positive < 24);
        QCOMPARE(view.plot()->yAxis->scaleType(), QCPAxis::stLogarithmic);
        QCOMPARE(view.shrinkage().size(), size_t(2));
        QCOMPARE(view.shrinkage()[0].size(), size_t(10));
        for (double r : view.shrinkage()[0])
            QVERIFY(r > 0 && r <= 1);
        myelin::test::saveScreenshot(view, QStringLiteral("inspect_time_gradients.png"));

        // Another step: the nearest recorded one.
        view.selectStep(13);
        QCOMPARE(view.shownStep().value_or(-1), int64_t(12));
        QCOMPARE(view.shownSeries()[0].norms, s.time_gradients(run, "2", 12)[0].norms);
        // A linear axis keeps the zeros.
        view.setLogScale(false);
        QCOMPARE(view.plot()->yAxis->scaleType(), QCPAxis::stLinear);
        QCOMPARE(view.plot()->graph(0)->dataCount(), 24);
        // The studio shows a new run once before its training reports in, then again as live:
        // turning live follows the newest capture even after a step was chosen.
        auto* follow = view.findChild<QCheckBox*>(QStringLiteral("timeGradientsFollow"));
        QVERIFY(follow);
        QVERIFY(!follow->isChecked());
        view.showRun(QString::fromStdString(path), run, true);
        QVERIFY(follow->isChecked());
        QCOMPARE(view.shownStep().value_or(-1), int64_t(40));
        view.runFinished();
    }

    void hiddenForRunsWithoutRecurrentLayers() {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        const std::string path = d + "/runs.sqlite";
        const int64_t lstm = record(wordLanguage(d, 2), d, path, 4);
        // The same words through Embedding -> Flatten -> Linear: no recurrent layer.
        const io::Project flat = io::parse_project(R"({"format_version": 1, "name": "flat",
          "model": {"nodes": [
            {"id": 1, "kind": "Input", "attrs": {"shape": [8], "dtype": "int64"}},
            {"id": 2, "kind": "Embedding", "attrs": {"num_embeddings": 64, "embedding_dim": 4}},
            {"id": 3, "kind": "Flatten"},
            {"id": 4, "kind": "Linear", "attrs": {"in_features": 32, "out_features": 2}},
            {"id": 5, "kind": "Output"}],
            "edges": [{"from": 1, "to": 2}, {"from": 2, "to": 3}, {"from": 3, "to": 4},
                      {"from": 4, "to": 5}]},
          "data": {"source": {"kind": "text-lines", "classes": "A=a, B=b", "max_length": 8},
                   "validation_fraction": 0.25, "batch_size": 4, "num_workers": 0},
          "training": {"loss": {"kind": "CrossEntropyLoss"}, "optimizer": {"kind": "Adam"},
                       "capture": {"feature_maps_every": 2}}})");
        const int64_t plain = record(flat, d, path, 4);

        MainWindow w;
        w.resize(1200, 800);
        w.show();
        QVERIFY(w.openProject(myelin::test::examplePath("word_language_lstm")));
        QTabWidget* tabs = workspaceTabs(w);
        QVERIFY(tabs);
        const int index = tabs->indexOf(w.timeGradientsView());
        QVERIFY(index >= 0);
        QVERIFY(!tabs->isTabVisible(index)); // no run shown yet
        w.gradientFlowView()->setStorePath(QString::fromStdString(path));
        w.gradientFlowView()->showRun(lstm, false);
        QVERIFY(tabs->isTabVisible(index));
        QCOMPARE(w.timeGradientsView()->run(), lstm);
        w.gradientFlowView()->showRun(plain, false);
        QCOMPARE(w.timeGradientsView()->run(), plain);
        QVERIFY(!w.timeGradientsView()->available());
        QVERIFY(!tabs->isTabVisible(index));
        QVERIFY(!w.timeGradientsView()->message().isEmpty());

        // A live run with nothing recorded yet: the tab appears once its first series is in,
        // although the view itself is hidden.
        int64_t live = 0;
        {
            store::RunStore s = store::RunStore::open(path);
            live = s.create_run({.name = "live"});
        }
        QSignalSpy available(w.timeGradientsView(), &TimeGradientsView::availabilityChanged);
        w.gradientFlowView()->showRun(live, true);
        QVERIFY(!tabs->isTabVisible(index));
        {
            store::RunStore s = store::RunStore::open(path);
            s.log_time_gradients(live, {"2", 1, 0, 0, 0, {0.5, 0.25}});
        }
        QVERIFY(available.wait(8000));
        QVERIFY(tabs->isTabVisible(index));
    }

  private:
    QTemporaryDir home_;
};

QTEST_MAIN(TestTimeGradientsView)
#include "test_time_gradients_view.moc"
