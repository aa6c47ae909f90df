// Plugins: the example plugin loads, its layer kind analyses, builds, computes what it claims and
// trains its parameters; a plugin is loaded whole or not at all; every kind of bad plugin is
// refused with a message naming the file and what is wrong, and never takes the process down.
#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/graph/build.h>
#include <myelin/graph/registry.h>
#include <myelin/io/project.h>
#include <myelin/plugin/loader.h>
#include <myelin/plugin/plugin.h>
#include <myelin/spec/components.h>
#include <myelin/tensor.h>
#include <myelin/train/components.h>

#include <QTemporaryDir>
#include <QtTest>

#include "test_support.h"

#include <cmath>
#include <fstream>

using namespace myelin;

namespace {

std::string test_plugin(const char* name) {
    return std::string(MYELIN_TEST_PLUGIN_DIR) + "/" + name + "/" + name + ".so";
}

// The one problem of loading `path` (a failed QVERIFY shows what was loaded instead).
QString refusal(const std::string& path) {
    plugin::LoadReport report = plugin::load_plugin(path);
    if (report.problems.size() != 1)
        return QStringLiteral("expected one problem, got %1 loaded and %2 problems")
            .arg(report.loaded.size())
            .arg(report.problems.size());
    return QString::fromStdString(report.problems[0].message);
}

// Input [C, H, W] -> SqueezeExcitation -> Output.
graph::ModelSpec se_model(int64_t channels, int64_t reduction) {
    graph::ModelSpec spec;
    auto in = spec.add_node("Input", "", {{"shape", std::vector<int64_t>{channels, 5, 5}}});
    auto se = spec.add_node("SqueezeExcitation", "se",
                            {{"channels", channels}, {"reduction", reduction}});
    auto out = spec.add_node("Output");
    spec.connect(in, se);
    spec.connect(se, out);
    return spec;
}

} // namespace

class TestPlugins : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase();
    void exampleAddsItsLayer();
    void exampleComputesSqueezeExcitation();
    void exampleProjectIsValid();
    void loadingTwiceIsHarmless();
    void wrongInterfaceVersionIsRefused();
    void missingEntryPointIsRefused();
    void nameClashRefusesTheWholePlugin();
    void throwingRegistrationIsRefused();
    void notALibraryIsRefused();
    void throwingFactoriesBecomeErrors();
    void searchPathOrder();
};

void TestPlugins::initTestCase() {
    plugin::LoadReport report = plugin::load_plugins({MYELIN_EXAMPLE_PLUGIN_DIR});
    QVERIFY2(report.problems.empty(),
             report.problems.empty() ? "" : report.problems[0].message.c_str());
    QCOMPARE(report.loaded.size(), size_t(1));
}

void TestPlugins::exampleAddsItsLayer() {
    const plugin::LoadReport report = plugin::plugin_report();
    QCOMPARE(report.loaded.size(), size_t(1));
    const plugin::PluginInfo& info = report.loaded[0];
    QCOMPARE(QString::fromStdString(info.name), QStringLiteral("example"));
    QCOMPARE(info.kinds, std::vector<std::string>{"layer SqueezeExcitation"});
    const graph::LayerKind* kind = graph::find_layer_kind("SqueezeExcitation");
    QVERIFY(kind);
    QCOMPARE(kind->origin, info.path);
    QVERIFY(QString::fromStdString(info.path).endsWith("plugins/myelin_example.so"));
}

void TestPlugins::exampleComputesSqueezeExcitation() {
    const int64_t channels = 8, reduction = 4, squeezed = 2;
    graph::ModelSpec spec = se_model(channels, reduction);
    graph::Analysis a = graph::analyze(spec, 3);
    QVERIFY(a.ok());
    QCOMPARE(a.total_params, 2 * channels * squeezed + squeezed + channels);
    QCOMPARE(a.nodes[1].output->shape, (Dims{3, channels, 5, 5}));

    // A shape that does not fit shows on the node, with the plugin's own message.
    graph::ModelSpec wrong = se_model(channels, reduction);
    wrong.nodes[1].attrs.set("channels", int64_t(6));
    graph::Analysis bad = graph::analyze(wrong);
    QVERIFY(!bad.ok());
    QVERIFY(bad.problems_of(wrong.nodes[1].id, wrong).at(0).message.find("expected 6 channels") !=
            std::string::npos);

    manual_seed(7);
    auto model = graph::build(spec);
    // torchvision.ops.SqueezeExcitation's names and shapes.
    auto state = model->state_dict();
    std::vector<std::string> keys;
    for (const auto& [name, t] : state)
        keys.push_back(name);
    QCOMPARE(keys, (std::vector<std::string>{"se.fc1.weight", "se.fc1.bias", "se.fc2.weight",
                                             "se.fc2.bias"}));
    auto se = model->child("se");
    auto param = [&](const char* child, const char* name) -> Tensor& {
        return se->child(child)->param(name);
    };
    QCOMPARE(param("fc1", "weight").sizes(), (Dims{squeezed, channels, 1, 1}));

    // y = x * sigmoid(W2 relu(W1 mean(x) + b1) + b2), written out with plain matrix products.
    Tensor x = randn({3, channels, 5, 5}).requires_grad_();
    Tensor y = (*model)(x);
    Tensor w1 = param("fc1", "weight").detach().reshape({squeezed, channels});
    Tensor w2 = param("fc2", "weight").detach().reshape({channels, squeezed});
    Tensor s = x.detach().mean({2, 3});                                 // [N, C]
    Tensor h = relu(matmul(s, w1.t()) + param("fc1", "bias").detach()); // [N, S]
    Tensor gate = sigmoid(matmul(h, w2.t()) + param("fc2", "bias").detach());
    Tensor expected = x.detach() * gate.reshape({3, channels, 1, 1});
    QVERIFY(allclose(y.detach(), expected, 1e-5, 1e-6));

    // Autograd reaches the plugin's parameters.
    y.sum().backward();
    QVERIFY(param("fc1", "weight").grad().defined());
    QVERIFY(param("fc2", "bias").grad().defined());
    QVERIFY(x.grad().defined());
}

void TestPlugins::exampleProjectIsValid() {
    io::Project project =
        io::load_project(std::string(MYELIN_SOURCE_DIR) + "/plugins/example/fashion_se.myelin");
    graph::Analysis a = graph::analyze(project.model);
    QVERIFY2(a.ok(), a.problems.empty() ? "" : a.problems[0].message.c_str());
    int se_blocks = 0;
    for (const auto& node : project.model.nodes)
        se_blocks += node.kind == "SqueezeExcitation";
    QCOMPARE(se_blocks, 2);
    QVERIFY(graph::build(project.model));
}

void TestPlugins::loadingTwiceIsHarmless() {
    plugin::LoadReport again = plugin::load_plugins({MYELIN_EXAMPLE_PLUGIN_DIR});
    QVERIFY(again.loaded.empty());
    QVERIFY(again.problems.empty());
    int count = 0;
    for (const auto& k : graph::layer_kinds())
        count += k.name == "SqueezeExcitation";
    QCOMPARE(count, 1);
}

void TestPlugins::wrongInterfaceVersionIsRefused() {
    const std::string path = test_plugin("wrong_version");
    QString e = refusal(path);
    // wrong_version.cpp says this build's version + 1.
    QVERIFY2(e.startsWith(QString::fromStdString(
                 "plugin " + path + ": was built for plugin interface version " +
                 std::to_string(MYELIN_PLUGIN_ABI_VERSION + 1) + "; this Myelin needs version " +
                 std::to_string(MYELIN_PLUGIN_ABI_VERSION))),
             qPrintable(e));
}

void TestPlugins::missingEntryPointIsRefused() {
    QString e = refusal(test_plugin("no_entry_point"));
    QVERIFY2(e.contains("is not a Myelin plugin: it has no myelin_plugin_abi_version entry point"),
             qPrintable(e));
}

void TestPlugins::nameClashRefusesTheWholePlugin() {
    QString e = refusal(test_plugin("name_clash"));
    QVERIFY2(e.contains("layer kind 'ReLU' is already registered (built in); nothing of this "
                        "plugin was loaded"),
             qPrintable(e));
    QVERIFY(!graph::find_layer_kind("ClashTestIdentity"));
    QVERIFY(graph::find_layer_kind("ReLU")->origin.empty());
    // A kind a loaded plugin already added is named with that plugin.
    graph::LayerKind copy = *graph::find_layer_kind("SqueezeExcitation");
    QString twice = error_of<Error>([&] { graph::register_layer_kind(copy); });
    QVERIFY2(twice.contains("already registered (by ") && twice.contains("myelin_example.so"),
             qPrintable(twice));
}

void TestPlugins::throwingRegistrationIsRefused() {
    QString e = refusal(test_plugin("throwing_register"));
    QVERIFY2(e.endsWith("failed while adding its kinds: cannot find my license file"),
             qPrintable(e));
}

void TestPlugins::notALibraryIsRefused() {
    QTemporaryDir dir;
    const std::string path = dir.path().toStdString() + "/garbage.so";
    std::ofstream(path) << "this is not an ELF file";
    QString e = refusal(path);
    QVERIFY2(e.startsWith(QString::fromStdString("plugin " + path + ": cannot be loaded: ")),
             qPrintable(e));
    // A folder of them: reported, and the loader goes on.
    plugin::LoadReport report = plugin::load_plugins({dir.path().toStdString(), "/nonexistent"});
    QVERIFY(report.loaded.empty());
}

void TestPlugins::throwingFactoriesBecomeErrors() {
    plugin::LoadReport report = plugin::load_plugin(test_plugin("throwing_factories"));
    QCOMPARE(report.loaded.size(), size_t(1));
    QCOMPARE(report.loaded[0].kinds,
             (std::vector<std::string>{"layer ThrowingLayer", "loss ThrowingLoss"}));

    graph::ModelSpec spec;
    auto in = spec.add_node("Input", "", {{"shape", std::vector<int64_t>{4}}});
    auto layer = spec.add_node("ThrowingLayer", "t");
    auto out = spec.add_node("Output");
    spec.connect(in, layer);
    spec.connect(layer, out);
    QVERIFY(graph::analyze(spec).ok());
    QString e = error_of<Error>([&] { graph::build(spec); });
    QVERIFY2(e.contains("layer kind ThrowingLayer: no weights today") && e.contains("plugin "),
             qPrintable(e));

    // The shape rule's exception is shown on the node like any shape error.
    spec.node(layer).attrs.set("mode", int64_t(1));
    graph::Analysis a = graph::analyze(spec);
    QVERIFY(!a.ok());
    QVERIFY(a.problems_of(layer, spec).at(0).message.find("shape rule exploded") !=
            std::string::npos);

    // A loss factory that throws something that is not even an exception.
    QString loss = error_of<Error>([] { train::make_loss({"ThrowingLoss", {}}); });
    QVERIFY2(loss.contains("loss ThrowingLoss: threw something that is not a std::exception"),
             qPrintable(loss));
}

void TestPlugins::searchPathOrder() {
    qputenv("MYELIN_PLUGIN_PATH", "/first:/second");
    qputenv("HOME", "/home/someone");
    auto folders = plugin::plugin_search_path();
    QVERIFY(folders.size() >= 4);
    QCOMPARE(folders[0].string(), std::string("/first"));
    QCOMPARE(folders[1].string(), std::string("/second"));
    QCOMPARE(folders[2].string(), std::string("/home/someone/.local/share/myelin/plugins"));
    QVERIFY(folders[3].string().ends_with("/myelin/plugins"));
}

QTEST_GUILESS_MAIN(TestPlugins)
#include "test_plugins.moc"
