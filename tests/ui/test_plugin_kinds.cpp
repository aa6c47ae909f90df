// Kinds added to core after start-up — by a test, or by a plugin — appear in the studio without
// any ui/ code naming them: the Training page's loss / optimizer / schedule choices, the Data
// page's sources, the palette (under the kind's category). A project naming a kind nobody
// provides opens, shows the error on its node, and saves without losing it.
#include "document/model_edits.h"
#include "document/project_document.h"
#include "editor/graph_scene.h"
#include "editor/layer_palette.h"
#include "editor/model_editor.h"
#include "editor/node_item.h"
#include "pages/training_page.h"
#include "shell/main_window.h"
#include "ui_test_support.h"
#include "widgets/theme.h"

#include <myelin/graph/analysis.h>
#include <myelin/io/project.h>
#include <myelin/nn/layers.h>
#include <myelin/nn/loss.h>
#include <myelin/optim/optim.h>
#include <myelin/optim/scheduler.h>
#include <myelin/plugin/loader.h>
#include <myelin/spec/components.h>
#include <myelin/spec/option_fields.h>
#include <myelin/tensor.h>

#include <QAction>
#include <QComboBox>
#include <QDialog>
#include <QFile>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <QtTest>

#include <array>
#include <limits>

using namespace myelin;
using myelin::test::examplePath;
using myelin::test::saveScreenshot;

namespace {

struct TestSgdOptions {
    double lr = 0.05;
    double zeta = 0.25;
    static const std::array<optim::OptionField<TestSgdOptions>, 2> fields;
};
const std::array<optim::OptionField<TestSgdOptions>, 2> TestSgdOptions::fields{{
    {"lr", &TestSgdOptions::lr, "Step.", 0.0, std::numeric_limits<double>::infinity(), true},
    {"zeta", &TestSgdOptions::zeta, "A made-up option.", 0.0, 1.0},
}};

struct TestHalvingOptions {
    int64_t every = 3;
    static const std::array<optim::OptionField<TestHalvingOptions>, 1> fields;
};
const std::array<optim::OptionField<TestHalvingOptions>, 1> TestHalvingOptions::fields{{
    {"every", &TestHalvingOptions::every, "Steps between halvings.", 1},
}};

// Kinds a test registers, as a plugin would: one of each family the Training page offers.
void registerTestKinds() {
    spec::LossKind loss;
    loss.name = "TestSquaredError";
    loss.doc = "A loss registered by the test.";
    loss.options = {graph::attr::number("scale", 1.0, "Multiplies the loss.", 0.0)};
    loss.build = [](const graph::Attrs&, const spec::LossContext&) {
        return std::make_shared<nn::MSELoss>();
    };
    spec::register_kind(std::move(loss));

    // Its options described once, as the built-in optimizers' are (spec/option_fields.h): the
    // made-up `zeta` is written in TestSgdOptions::fields only.
    spec::OptimizerKind optimizer;
    optimizer.name = "TestPlainSGD";
    optimizer.doc = "An optimizer registered by the test.";
    optimizer.options = spec::described<TestSgdOptions>();
    optimizer.build = [](const graph::Attrs& o, std::vector<optim::ParamGroup> groups) {
        const TestSgdOptions t = spec::read_options<TestSgdOptions>(o);
        return std::make_unique<optim::SGD>(std::move(groups), optim::SGDOptions{.lr = t.lr});
    };
    spec::register_kind(std::move(optimizer));

    // A schedule's options likewise: `every` is written in TestHalvingOptions::fields only.
    spec::SchedulerKind schedule;
    schedule.name = "TestHalving";
    schedule.doc = "Halves the lr every `every` steps.";
    schedule.options = spec::described<TestHalvingOptions>();
    schedule.build = [](const graph::Attrs& o, optim::Optimizer& opt, int64_t) {
        const TestHalvingOptions t = spec::read_options<TestHalvingOptions>(o);
        return std::make_shared<optim::StepLR>(
            opt, optim::StepLROptions{.step_size = t.every, .gamma = 0.5});
    };
    spec::register_kind(std::move(schedule));

    struct Count final : spec::MetricAccumulator {
        int64_t n = 0;
        void update(const Tensor& outputs, const Tensor&) override { n += outputs.size(0); }
        double value() const override { return double(n); }
    };
    spec::MetricKind metric;
    metric.name = "test_examples_seen";
    metric.doc = "A metric registered by the test.";
    metric.higher_is_better = true;
    metric.build = [] { return std::make_unique<Count>(); };
    spec::register_kind(std::move(metric));
}

QStringList comboItems(QComboBox* combo) {
    QStringList items;
    for (int i = 0; combo && i < combo->count(); ++i)
        items << combo->itemText(i);
    return items;
}

} // namespace

class TestPluginKinds : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase();
    void registeredKindsAppearOnTheTrainingPage();
    void pluginLayerIsInThePaletteAndTheEditor();
    void pluginLayerGetsQuickFixes();
    void unknownKindOpensAndSaves();

  private:
    QTemporaryDir home_;
};

void TestPluginKinds::initTestCase() {
    myelin::test::isolateStudioSettings(home_);
    myelin::ui::applyStudioTheme(*qApp); // as the studio does: screenshots show its look
    registerTestKinds();
    const plugin::LoadReport report = plugin::load_plugins({MYELIN_EXAMPLE_PLUGIN_DIR});
    QVERIFY2(report.problems.empty(),
             report.problems.empty() ? "" : report.problems[0].message.c_str());
    QCOMPARE(report.loaded.size(), size_t(1));
}

void TestPluginKinds::registeredKindsAppearOnTheTrainingPage() {
    ui::ProjectDocument doc;
    doc.open(io::load_project(examplePath("fashion_mlp").toStdString()),
             examplePath("fashion_mlp"));
    ui::TrainingPage page(&doc);
    page.resize(1280, 800);
    page.show();

    auto* loss = page.findChild<QComboBox*>(QStringLiteral("lossKind"));
    auto* optimizer = page.findChild<QComboBox*>(QStringLiteral("optimizerKind"));
    auto* schedule = page.findChild<QComboBox*>(QStringLiteral("schedulerKind"));
    QVERIFY(loss && optimizer && schedule);
    QVERIFY2(comboItems(loss).contains("TestSquaredError"), qPrintable(comboItems(loss).join(',')));
    QVERIFY(comboItems(optimizer).contains("TestPlainSGD"));
    QVERIFY(comboItems(schedule).contains("TestHalving"));
    // A registered metric can be watched by early stopping like a built-in one.
    auto* watched = page.findChild<QComboBox*>(QStringLiteral("earlyStoppingMetric"));
    QVERIFY(watched);
    QVERIFY2(comboItems(watched).contains("val_test_examples_seen"),
             qPrintable(comboItems(watched).join(',')));

    // Choosing them edits the project like a built-in kind, with the kind's defaults.
    optimizer->setCurrentIndex(optimizer->findText("TestPlainSGD"));
    QCOMPARE(QString::fromStdString(doc.project().train.optimizer.kind),
             QStringLiteral("TestPlainSGD"));
    QCOMPARE(doc.project().train.optimizer.options.get_float("lr"), 0.05);
    // The made-up option has its field on the page and its default in the project.
    QVERIFY(page.findChild<QWidget*>(QStringLiteral("attr_zeta")));
    QCOMPARE(doc.project().train.optimizer.options.get_float("zeta"), 0.25);
    schedule->setCurrentIndex(schedule->findText("TestHalving"));
    QVERIFY(doc.project().train.scheduler);
    QCOMPARE(doc.project().train.scheduler->options.get_int("every"), int64_t(3));
    QVERIFY(page.findChild<QWidget*>(QStringLiteral("attr_every")));
    // A step-driven kind gets the warmup options every schedule has.
    QVERIFY(doc.project().train.scheduler->options.contains("warmup"));
    loss->setCurrentIndex(loss->findText("TestSquaredError"));
    QCOMPARE(QString::fromStdString(doc.project().train.loss.kind),
             QStringLiteral("TestSquaredError"));

    // The project format writes and reads them back.
    io::Project again = io::parse_project(io::serialize_project(doc.project()));
    QVERIFY(again.train == doc.project().train);
    saveScreenshot(page, QStringLiteral("plugin_kinds_training_page.png"));
}

void TestPluginKinds::pluginLayerIsInThePaletteAndTheEditor() {
    ui::MainWindow window;
    window.resize(1400, 900);
    window.show();
    QVERIFY(window.openProject(
        QStringLiteral(MYELIN_TEST_SOURCE_DIR "/plugins/example/fashion_se.myelin")));

    auto* palette = window.findChild<ui::LayerPalette*>();
    QVERIFY(palette);
    QVERIFY(palette->visibleKinds().contains("SqueezeExcitation"));
    // Under its category, with the built-in normalization layers, not after the last category.
    const QList<QTreeWidgetItem*> found =
        palette->tree()->findItems("SqueezeExcitation", Qt::MatchExactly | Qt::MatchRecursive);
    QCOMPARE(found.size(), 1);
    QCOMPARE(found[0]->parent()->text(0), QStringLiteral("Normalization"));
    QVERIFY(found[0]->toolTip(0).contains("myelin_example.so"));

    // Every node of the plugin project is valid on the canvas.
    const graph::ModelSpec& spec = window.document()->spec();
    for (const auto& node : spec.nodes) {
        ui::NodeItem* item = window.editor()->scene()->nodeItem(node.id);
        QVERIFY(item);
        QVERIFY2(!item->hasError(), node.kind.c_str());
    }
    saveScreenshot(window, QStringLiteral("plugin_example_editor.png"));

    // Help > Plugins… lists it with its kinds.
    auto* action = window.findChild<QAction*>(QStringLiteral("actionPlugins"));
    QVERIFY(action);
    action->trigger();
    auto* dialog = window.findChild<QDialog*>(QStringLiteral("pluginsDialog"));
    QVERIFY(dialog);
    auto* tree = dialog->findChild<QTreeWidget*>(QStringLiteral("pluginsTree"));
    QVERIFY(tree);
    QCOMPARE(tree->topLevelItemCount(), 1);
    QCOMPARE(tree->topLevelItem(0)->text(0), QStringLiteral("example"));
    QCOMPARE(tree->topLevelItem(0)->child(0)->text(0), QStringLiteral("layer SqueezeExcitation"));
    saveScreenshot(*dialog, QStringLiteral("plugins_dialog.png"));
    dialog->close();
}

// The quick-fixes come from the kind's facts, so a plugin layer that declares its channel
// attribute gets "Set channels" like Conv2d gets "Set in_channels".
void TestPluginKinds::pluginLayerGetsQuickFixes() {
    graph::ModelSpec spec;
    auto in = spec.add_node("Input", "", {{"shape", std::vector<int64_t>{3, 8, 8}}});
    auto conv = spec.add_node("Conv2d", "conv",
                              {{"in_channels", int64_t(3)}, {"out_channels", int64_t(32)}});
    auto se = spec.add_node("SqueezeExcitation", "se", {{"channels", int64_t(16)}});
    auto out = spec.add_node("Output");
    spec.connect(in, conv);
    spec.connect(conv, se);
    spec.connect(se, out);
    graph::Analysis analysis = graph::analyze(spec);
    QVERIFY(!analysis.ok());
    std::vector<ui::QuickFix> fixes = ui::quickFixes(spec, analysis, se);
    QCOMPARE(fixes.size(), size_t(1));
    QCOMPARE(fixes[0].text, QStringLiteral("Set channels of se to 32"));
    QVERIFY(graph::analyze(fixes[0].result).ok());
}

void TestPluginKinds::unknownKindOpensAndSaves() {
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("missing.myelin"));
    io::Project project = io::load_project(examplePath("fashion_mlp").toStdString());
    graph::Node& hidden = project.model.nodes.at(2);
    const graph::NodeId id = hidden.id;
    hidden.kind = "LayerFromAMissingPlugin";
    hidden.attrs = graph::Attrs{{"width", int64_t(7)}, {"mode", std::string("fast")}};
    io::save_project(project, path.toStdString());

    ui::MainWindow window;
    window.resize(1400, 900);
    window.show();
    QVERIFY(window.openProject(path));
    ui::NodeItem* item = window.editor()->scene()->nodeItem(id);
    QVERIFY(item);
    QVERIFY(item->hasError());
    bool named = false;
    for (const auto& p : window.document()->analysis().problems)
        named = named || (p.node == id &&
                          p.message.find("unknown layer kind 'LayerFromAMissingPlugin'") == 0);
    QVERIFY(named);
    // Selecting it shows it in the inspector (no attributes to edit) without trouble.
    item->setSelected(true);
    QCoreApplication::processEvents();
    saveScreenshot(window, QStringLiteral("plugin_missing_kind.png"));

    const QString copy = dir.filePath(QStringLiteral("copy.myelin"));
    window.document()->saveAs(copy);
    io::Project saved = io::load_project(copy.toStdString());
    const graph::Node* kept = saved.model.find(id);
    QVERIFY(kept);
    QCOMPARE(QString::fromStdString(kept->kind), QStringLiteral("LayerFromAMissingPlugin"));
    QCOMPARE(kept->attrs.get_int("width"), int64_t(7));
    QCOMPARE(QString::fromStdString(kept->attrs.get_string("mode")), QStringLiteral("fast"));
}

QTEST_MAIN(TestPluginKinds)
#include "test_plugin_kinds.moc"
