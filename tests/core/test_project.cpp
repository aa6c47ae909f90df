// Project files: the examples load, validate and round-trip byte-stable; every kind of bad input
// is refused with the file and the line:column (JSON syntax) or the JSON path of the bad field;
// newer format versions are refused; saving is atomic; the training components build.
#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/io/project.h>
#include <myelin/nn/loss.h>
#include <myelin/optim/optimizer.h>
#include <myelin/tensor.h>
#include <myelin/train/components.h>

#include <QTemporaryDir>
#include <QtTest>

#include "test_support.h"

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace myelin;
using namespace myelin::io;

namespace {

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string example(const char* name) {
    return std::string(MYELIN_SOURCE_DIR) + "/resources/examples/" + name;
}

const char* const kMinimal = R"({
  "format_version": 1,
  "model": {
    "nodes": [
      {"id": 1, "kind": "Input", "attrs": {"shape": [4]}},
      {"id": 2, "kind": "Linear", "attrs": {"in_features": 4, "out_features": 2}},
      {"id": 3, "kind": "Output"}
    ],
    "edges": [{"from": 1, "to": 2}, {"from": 2, "to": 3}]
  },
  "data": {"source": {"kind": "fashion-mnist"}},
  "training": {"loss": {"kind": "MSELoss"}, "optimizer": {"kind": "SGD", "lr": 0.1}}
})";

// The message of parsing `text` (which must fail).
QString parse_error(const std::string& text) {
    return error_of<ProjectError>([&] { parse_project(text, "p.myelin"); });
}

// kMinimal with `from` replaced by `to` (exactly once).
std::string edited(const std::string& from, const std::string& to) {
    std::string text = kMinimal;
    size_t at = text.find(from);
    if (at == std::string::npos) qFatal("test bug: '%s' not in the minimal project", from.c_str());
    return text.replace(at, from.size(), to);
}

} // namespace

class TestProject : public QObject {
    Q_OBJECT

  private slots:
    void examplesRoundTripByteStable();
    void examplesAreValid();
    void defaultsFillIn();
    void jsonSyntaxErrorsHaveLineAndColumn();
    void fieldErrorsHaveJsonPaths();
    void initialWeightsAreWrittenOnlyWhenSet();
    void newerFormatIsRefused();
    void deviceIsWrittenOnlyWhenNotCpu();
    void flushDenormalIsWrittenOnlyWhenOn();
    void gpuNumericsAreWrittenOnlyWhenOn();
    void attributeRangeIsLeftToValidation();
    void unknownLayerKindsAreKept();
    void uiObjectIsKeptVerbatim();
    void saveIsAtomic();
    void componentsBuild();
    void learningRatePreview();
};

void TestProject::examplesRoundTripByteStable() {
    for (const char* name : {"fashion_mlp.myelin", "fashion_cnn.myelin", "fashion_resnet.myelin",
                             "tabular_regression.myelin"}) {
        std::string text = read_text(example(name));
        QVERIFY2(!text.empty(), name);
        Project p = parse_project(text, name);
        QCOMPARE(QString::fromStdString(serialize_project(p)), QString::fromStdString(text));
        QVERIFY(parse_project(serialize_project(p)) == p);
    }
}

void TestProject::examplesAreValid() {
    for (const char* name : {"fashion_mlp.myelin", "fashion_cnn.myelin", "fashion_resnet.myelin",
                             "tabular_regression.myelin"}) {
        Project p = load_project(example(name));
        auto a = graph::analyze(p.model);
        QVERIFY2(a.problems.empty(), name);
        QVERIFY(!p.name.empty());
    }
    Project resnet = load_project(example("fashion_resnet.myelin"));
    int adds = 0;
    for (const auto& n : resnet.model.nodes)
        adds += n.kind == "Add";
    QCOMPARE(adds, 2);
    QVERIFY(resnet.train.scheduler.has_value());
    Project tab = load_project(example("tabular_regression.myelin"));
    QCOMPARE(tab.data.source.kind, std::string("csv"));
    QCOMPARE(tab.data.source.options.get_string("task"), std::string("regression"));
    QVERIFY(std::filesystem::exists(example("data/tabular_regression.csv")));
}

void TestProject::defaultsFillIn() {
    Project p = parse_project(kMinimal);
    QCOMPARE(p.format_version, 1);
    QCOMPARE(p.model.nodes.size(), size_t(3));
    QCOMPARE(p.model.node(2).attrs.get_bool("bias"), true);
    QCOMPARE(p.model.node(1).attrs.get_string("dtype"), std::string("float32"));
    QCOMPARE(p.train.optimizer.options.get_float("lr"), 0.1);
    QCOMPARE(p.train.optimizer.options.get_float("momentum"), 0.0);
    QCOMPARE(p.data.batch_size, int64_t(128));
    QCOMPARE(p.data.source.options.get_string("directory"),
             std::string("/usr/share/datasets/fashion-mnist"));
    QCOMPARE(p.train.epochs, int64_t(10));
    QVERIFY(!p.train.scheduler);
    QCOMPARE(p.ui_json, std::string("{}"));
    // Save -> load -> save is stable from a hand-written file on.
    std::string once = serialize_project(p);
    QCOMPARE(serialize_project(parse_project(once)), once);
}

void TestProject::jsonSyntaxErrorsHaveLineAndColumn() {
    QString e = parse_error("{\n  \"format_version\": 1,\n  \"model\": {,}\n}");
    QVERIFY2(e.startsWith("p.myelin:3:13: invalid JSON: "), qPrintable(e));
    e = parse_error("{\"format_version\": 1");
    QVERIFY2(e.startsWith("p.myelin:1:"), qPrintable(e));
    QVERIFY2(e.contains("invalid JSON"), qPrintable(e));
    e = parse_error("");
    QVERIFY2(e.startsWith("p.myelin:1:1: invalid JSON"), qPrintable(e));
    e = parse_error("[1, 2]");
    QCOMPARE(e, QStringLiteral("p.myelin:(top level): expected an object, got an array"));
    // A number too large for a double is a ProjectError too (found by fuzz_project: it escaped
    // as nlohmann's out_of_range).
    e = parse_error("{\"format_version\": 1, \"name\": 1e999}");
    QVERIFY2(e.startsWith("p.myelin: invalid JSON: number overflow parsing '1e999'"),
             qPrintable(e));
    // A file that cannot be read names the path.
    e = error_of<ProjectError>([] { load_project("/nonexistent/x.myelin"); });
    QCOMPARE(e, QStringLiteral("/nonexistent/x.myelin: cannot open the file"));
}

void TestProject::fieldErrorsHaveJsonPaths() {
    struct Case {
        std::string from, to, message;
    };
    const std::vector<Case> cases = {
        {"\"format_version\": 1,", "", "p.myelin:(top level): missing field 'format_version'"},
        {"\"out_features\": 2", "\"out_features\": \"2\"",
         "p.myelin:model.nodes[1].attrs.out_features: must be an integer >= 1, got \"2\""},
        {"\"shape\": [4]", "\"shape\": [4, \"x\"]",
         "p.myelin:model.nodes[0].attrs.shape[1]: expected an integer, got a string"},
        {"\"out_features\": 2", "\"out_featurs\": 2",
         "p.myelin:model.nodes[1].attrs.out_featurs: unknown option of Linear (known: "
         "in_features, out_features, bias)"},
        {"{\"id\": 3,", "{\"id\": 2,", "p.myelin:model.nodes[2].id: duplicate node id 2"},
        {"{\"from\": 2, \"to\": 3}", "{\"from\": 2, \"to\": 9}",
         "p.myelin:model.edges[1].to: no node has id 9"},
        {"{\"from\": 2, \"to\": 3}", "{\"from\": 2, \"to\": 3, \"port\": -1}",
         "p.myelin:model.edges[1].port: expected an integer >= 0, got -1"},
        {"\"edges\"", "\"edgez\"",
         "p.myelin:model.edgez: unknown field (expected one of nodes, edges)"},
        {"\"kind\": \"SGD\"", "\"kind\": \"Adamax\"",
         "p.myelin:training.optimizer.kind: unknown optimizer 'Adamax' (known: Adam, AdamW, SGD, "
         "RMSprop, Adagrad)"},
        {"\"lr\": 0.1", "\"lr\": -1",
         "p.myelin:training.optimizer.lr: must be a number > 0, got -1"},
        {"\"lr\": 0.1", "\"lr\": 0.1, \"betas\": 1",
         "p.myelin:training.optimizer.betas: unknown option of SGD"},
        {"\"source\": {\"kind\": \"fashion-mnist\"}", "\"source\": {\"kind\": \"hdf5\"}",
         "p.myelin:data.source.kind: unknown data source 'hdf5'"},
        {"\"source\": {\"kind\": \"fashion-mnist\"}",
         "\"source\": {\"kind\": \"fashion-mnist\"}, \"batch_size\": 0",
         "p.myelin:data.batch_size: expected an integer >= 1, got 0"},
        {"\"loss\": {\"kind\": \"MSELoss\"}", "\"loss\": {\"kind\": \"MSELoss\"}, \"epochs\": 1.5",
         "p.myelin:training.epochs: expected an integer, got a number"},
        {"\"loss\": {\"kind\": \"MSELoss\"}",
         "\"loss\": {\"kind\": \"MSELoss\"}, \"precision\": \"fp8\"",
         "p.myelin:training.precision: expected one of float32, bfloat16, float16, got \"fp8\""},
        {"\"loss\": {\"kind\": \"MSELoss\"}",
         "\"loss\": {\"kind\": \"MSELoss\"}, \"device\": \"gpu0\"",
         "p.myelin:training.device: expected \"cpu\", \"cuda\" or \"cuda:N\" (N = 0, 1, ...), "
         "got \"gpu0\""},
        {"\"loss\": {\"kind\": \"MSELoss\"}",
         "\"loss\": {\"kind\": \"MSELoss\"}, \"device\": \"cuda:-1\"",
         "p.myelin:training.device: expected \"cpu\", \"cuda\" or \"cuda:N\""},
        {"\"loss\": {\"kind\": \"MSELoss\"}", "\"loss\": {\"kind\": \"MSELoss\"}, \"device\": 0",
         "p.myelin:training.device: expected a string, got an integer"},
        {"\"loss\": {\"kind\": \"MSELoss\"}",
         "\"loss\": {\"kind\": \"CrossEntropyLoss\", "
         "\"label_smoothing\": 2}",
         "p.myelin:training.loss.label_smoothing: must be a number >= 0 and <= 1, got 2"},
        {"\"loss\": {\"kind\": \"MSELoss\"}",
         "\"loss\": {\"kind\": \"MSELoss\"}, \"scheduler\": {\"kind\": \"StepLR\", "
         "\"step_size\": 0}",
         "p.myelin:training.scheduler.step_size: must be an integer >= 1, got 0"},
        {"\"loss\": {\"kind\": \"MSELoss\"}",
         "\"loss\": {\"kind\": \"MSELoss\"}, \"early_stopping\": {\"mode\": \"down\"}",
         "p.myelin:training.early_stopping.mode: expected one of min, max, got \"down\""},
        {"\"training\"", "\"trianing\"", "p.myelin:trianing: unknown field (expected one of"},
    };
    for (const Case& c : cases) {
        QString e = parse_error(edited(c.from, c.to));
        QVERIFY2(e.startsWith(QString::fromStdString(c.message)),
                 qPrintable("wanted: " + QString::fromStdString(c.message) + "\n   got: " + e));
    }
    // The exception carries the parts separately for the studio.
    try {
        parse_project(edited("\"lr\": 0.1", "\"lr\": \"fast\""), "x.myelin");
        QFAIL("no exception");
    } catch (const ProjectError& e) {
        QCOMPARE(QString::fromStdString(e.file()), QStringLiteral("x.myelin"));
        QCOMPARE(QString::fromStdString(e.location()), QStringLiteral("training.optimizer.lr"));
        QVERIFY(QString::fromStdString(e.reason()).startsWith("must be a number > 0"));
    }
}

// training.init_weights: written only when set, in a version-6 file, and read back.
void TestProject::initialWeightsAreWrittenOnlyWhenSet() {
    Project p = parse_project(kMinimal);
    QVERIFY(p.train.init_weights.empty());
    QVERIFY(serialize_project(p).find("init_weights") == std::string::npos);
    p.train.init_weights = "imported.safetensors";
    const std::string text = serialize_project(p);
    QVERIFY2(text.find("\"init_weights\": \"imported.safetensors\"") != std::string::npos,
             text.c_str());
    QVERIFY2(text.find("\"format_version\": 6,") != std::string::npos, text.c_str());
    QCOMPARE(parse_project(text).train, p.train);
}

void TestProject::newerFormatIsRefused() {
    QString e = parse_error(edited("\"format_version\": 1", "\"format_version\": 7"));
    QCOMPARE(e, QStringLiteral("p.myelin:format_version: this project needs format version 7; "
                               "this build of Myelin reads up to version %1 (update Myelin to "
                               "open it)")
                    .arg(myelin::io::kProjectFormatVersion));
    e = parse_error(edited("\"format_version\": 1", "\"format_version\": 0"));
    QVERIFY2(e.contains("format_version: expected an integer >= 1"), qPrintable(e));
}

// training.device: absent means "cpu" and a file without it saves byte for byte the same (the
// examples above); another device is written, read back, and makes the file version 3 so that
// older builds refuse it by its version; float16 does too.
void TestProject::deviceIsWrittenOnlyWhenNotCpu() {
    Project p = parse_project(kMinimal);
    QCOMPARE(p.train.device, std::string("cpu"));
    QVERIFY(serialize_project(p).find("\"device\"") == std::string::npos);
    QVERIFY(serialize_project(p).find("\"format_version\": 1,") != std::string::npos);
    // Written as "cpu" by hand: read, and left out when saved (the default).
    Project cpu = parse_project(edited("\"loss\": {\"kind\": \"MSELoss\"}",
                                       "\"device\": \"cpu\", \"loss\": {\"kind\": \"MSELoss\"}"));
    QVERIFY(cpu == p);
    for (const char* device : {"cuda", "cuda:0", "cuda:3"}) {
        Project gpu = p;
        gpu.train.device = device;
        const std::string text = serialize_project(gpu);
        QVERIFY2(text.find("\"device\": \"" + std::string(device) + "\"") != std::string::npos,
                 text.c_str());
        QVERIFY2(text.find("\"format_version\": 3,") != std::string::npos, text.c_str());
        Project back = parse_project(text);
        QCOMPARE(back.train.device, std::string(device));
        QCOMPARE(back.format_version, 3);
        back.format_version = p.format_version;
        QVERIFY(back == gpu);
        QCOMPARE(serialize_project(back), text);
    }
    Project half = p;
    half.train.precision = myelin::spec::Precision::Float16;
    QVERIFY(serialize_project(half).find("\"format_version\": 3,") != std::string::npos);
    QVERIFY(parse_project(serialize_project(half)).train.precision ==
            myelin::spec::Precision::Float16);
}

// training.flush_denormal: off and absent by default (files stay as they were); on, written and
// read back, and the file is version 4 so that older builds refuse it by its version.
void TestProject::flushDenormalIsWrittenOnlyWhenOn() {
    Project p = parse_project(kMinimal);
    QVERIFY(!p.train.flush_denormal);
    QVERIFY(serialize_project(p).find("flush_denormal") == std::string::npos);
    Project on = p;
    on.train.flush_denormal = true;
    const std::string text = serialize_project(on);
    QVERIFY2(text.find("\"flush_denormal\": true") != std::string::npos, text.c_str());
    QVERIFY2(text.find("\"format_version\": 4,") != std::string::npos, text.c_str());
    Project back = parse_project(text);
    QVERIFY(back.train.flush_denormal);
    QCOMPARE(back.format_version, 4);
    QCOMPARE(serialize_project(back), text);
    const QString e =
        parse_error(edited("\"loss\": {\"kind\": \"MSELoss\"}",
                           "\"flush_denormal\": 1, \"loss\": {\"kind\": \"MSELoss\"}"));
    QVERIFY2(e.contains("training.flush_denormal"), qPrintable(e));
}

// training.deterministic and training.allow_tf32: absent by default; on, written and read back
// in a version-5 file, which older builds refuse by its version.
void TestProject::gpuNumericsAreWrittenOnlyWhenOn() {
    Project p = parse_project(kMinimal);
    QVERIFY(!p.train.deterministic && !p.train.allow_tf32);
    const std::string plain = serialize_project(p);
    QVERIFY(plain.find("deterministic") == std::string::npos);
    QVERIFY(plain.find("allow_tf32") == std::string::npos);
    for (int which = 0; which < 2; ++which) {
        Project on = p;
        (which == 0 ? on.train.deterministic : on.train.allow_tf32) = true;
        const std::string text = serialize_project(on);
        const char* key = which == 0 ? "\"deterministic\": true" : "\"allow_tf32\": true";
        QVERIFY2(text.find(key) != std::string::npos, text.c_str());
        QVERIFY2(text.find("\"format_version\": 5,") != std::string::npos, text.c_str());
        const Project back = parse_project(text);
        QCOMPARE(back.train, on.train);
        QCOMPARE(serialize_project(back), text);
    }
    const QString e =
        parse_error(edited("\"loss\": {\"kind\": \"MSELoss\"}",
                           "\"deterministic\": \"yes\", \"loss\": {\"kind\": \"MSELoss\"}"));
    QVERIFY2(e.contains("training.deterministic"), qPrintable(e));
}

void TestProject::attributeRangeIsLeftToValidation() {
    // Out-of-range layer attributes load (the studio shows the problem on the node) ...
    Project p = parse_project(edited("\"out_features\": 2", "\"out_features\": 0"));
    auto a = graph::analyze(p.model);
    QVERIFY(!a.ok());
    QCOMPARE(a.problems.at(0).node, graph::NodeId(2));
    QVERIFY(a.problems.at(0).message.find("out_features: must be an integer >= 1") !=
            std::string::npos);
    // ... and survive a save unchanged.
    QVERIFY(parse_project(serialize_project(p)) == p);
}

// A node of a kind this build does not know (a plugin that is not installed) does not stop the
// file from opening: analysis reports it on the node, and saving writes it back unchanged.
void TestProject::unknownLayerKindsAreKept() {
    const std::string text = edited(
        "{\"id\": 2, \"kind\": \"Linear\", \"attrs\": {\"in_features\": 4, \"out_features\": 2}}",
        "{\"id\": 2, \"kind\": \"SqueezeExcite\", \"name\": \"se\", \"attrs\": "
        "{\"reduction\": 4, \"gate\": \"hard\", \"scale\": 0.5, \"sizes\": [1, 2], "
        "\"skip\": null}}");
    Project p = parse_project(text);
    const graph::Node* node = p.model.find(2);
    QVERIFY(node);
    QCOMPARE(QString::fromStdString(node->kind), QStringLiteral("SqueezeExcite"));
    QCOMPARE(node->attrs.get_int("reduction"), int64_t(4));
    QCOMPARE(QString::fromStdString(node->attrs.get_string("gate")), QStringLiteral("hard"));
    QCOMPARE(node->attrs.get_float("scale"), 0.5);
    QVERIFY(node->attrs.is_none("skip"));
    graph::Analysis a = graph::analyze(p.model);
    bool reported = false;
    for (const auto& problem : a.problems)
        reported = reported || (problem.node == 2 && problem.message.find("unknown layer kind "
                                                                          "'SqueezeExcite'") == 0);
    QVERIFY(reported);
    Project again = parse_project(serialize_project(p));
    QVERIFY(again == p);
    // A near miss of a built-in kind is named.
    Project typo = parse_project(edited("\"kind\": \"Linear\"", "\"kind\": \"Conv2D\""));
    bool named = false;
    for (const auto& problem : graph::analyze(typo.model).problems)
        named = named || problem.message == "unknown layer kind 'Conv2D' (did you mean Conv2d?)";
    QVERIFY(named);
}

void TestProject::uiObjectIsKeptVerbatim() {
    std::string text = edited("\"format_version\": 1,",
                              "\"format_version\": 1, \"ui\": {\"zoom\": 1.5, \"panels\": "
                              "[\"a\", {\"b\": null}], \"z\": {}},");
    Project p = parse_project(text);
    QCOMPARE(p.ui_json, std::string(R"({"zoom":1.5,"panels":["a",{"b":null}],"z":{}})"));
    Project q = parse_project(serialize_project(p));
    QCOMPARE(q.ui_json, p.ui_json);
    QVERIFY(parse_error(edited("\"format_version\": 1,", "\"format_version\": 1, \"ui\": 3,"))
                .contains("ui: expected an object, got an integer"));
}

void TestProject::saveIsAtomic() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    std::filesystem::path path = dir.filePath("p.myelin").toStdString();
    Project p = parse_project(kMinimal);
    p.name = "first";
    save_project(p, path);
    QVERIFY(load_project(path) == p);
    std::string before = read_text(path);
    // A save that fails (the ui text is not JSON) leaves the old file and no temporary behind.
    Project bad = p;
    bad.ui_json = "{not json";
    QVERIFY(error_of<Error>([&] { save_project(bad, path); }).contains("not valid JSON"));
    QCOMPARE(read_text(path), before);
    QCOMPARE(std::distance(std::filesystem::directory_iterator(dir.path().toStdString()),
                           std::filesystem::directory_iterator()),
             std::ptrdiff_t(1));
    // Saving into a missing folder fails with its path.
    QVERIFY(error_of<Error>([&] {
                save_project(p, "/nonexistent/dir/p.myelin");
            }).contains("/nonexistent/dir/p.myelin"));
}

void TestProject::componentsBuild() {
    // Every loss, optimizer and scheduler kind builds from its defaults.
    for (const auto& k : spec::loss_kinds()) {
        auto loss = train::make_loss({k.name, {}});
        QCOMPARE(QString(loss->name()), QString::fromStdString(k.name));
    }
    for (const auto& k : spec::optimizer_kinds()) {
        std::vector<optim::ParamGroup> groups(1);
        groups[0].params.push_back(zeros({3}).requires_grad_());
        auto opt = train::make_optimizer({k.name, {}}, groups);
        QCOMPARE(QString(opt->name()), QString::fromStdString(k.name));
        for (const auto& s : spec::scheduler_kinds()) {
            if (s.name == "OneCycleLR" && k.name == "Adagrad") { // no momentum to cycle
                QVERIFY(error_of<Error>([&] {
                            train::Schedule({s.name, {}}, *opt, 20);
                        }).contains("cycle_momentum"));
                continue;
            }
            train::Schedule schedule({s.name, {}}, *opt, 20);
            QCOMPARE(schedule.needs_metric(), s.name == "ReduceLROnPlateau");
            schedule.step(1.0);
        }
    }
    QVERIFY(error_of<Error>([] {
                train::make_loss({"HingeLoss", {}});
            }).contains("unknown loss 'HingeLoss'"));
    QVERIFY(spec::loss_takes_class_indices("CrossEntropyLoss"));
    QVERIFY(!spec::loss_takes_class_indices("MSELoss"));
    // Options reach the object: label smoothing changes the loss value.
    Tensor logits = tensor({{2.0, 0.0, -1.0}});
    Tensor target = from_vector(std::vector<int64_t>{0}, {1});
    double plain = (*train::make_loss({"CrossEntropyLoss", {}}))(logits, target).item<double>();
    double smooth =
        (*train::make_loss({"CrossEntropyLoss", {{"label_smoothing", 0.2}}}))(logits, target)
            .item<double>();
    QVERIFY(smooth > plain);
}

void TestProject::learningRatePreview() {
    spec::Choice adam{"Adam", {{"lr", 0.1}}};
    auto step = train::preview_lr(adam, {"StepLR", {{"step_size", int64_t(3)}, {"gamma", 0.5}}}, 7);
    QCOMPARE(step.size(), size_t(7));
    QCOMPARE(step[0], 0.1);
    QCOMPARE(step[2], 0.1);
    QCOMPARE(step[3], 0.05);
    QCOMPARE(step[6], 0.025);
    // Warmup: LinearLR from 0.1 x lr to lr over 2 steps, then the cosine over the rest.
    auto warm = train::preview_lr(adam, {"CosineAnnealingLR", {{"warmup", int64_t(2)}}}, 12);
    QVERIFY(qAbs(warm[0] - 0.01) < 1e-12);
    QVERIFY(qAbs(warm[1] - 0.055) < 1e-12);
    QVERIFY(qAbs(warm[2] - 0.1) < 1e-12);
    QVERIFY(warm[11] < warm[5]);
    QVERIFY(train::preview_lr(adam, {"ReduceLROnPlateau", {}}, 10).empty());
    // One-cycle peaks at max_lr.
    auto one = train::preview_lr(adam, {"OneCycleLR", {{"max_lr", 0.5}}}, 100);
    QVERIFY(qAbs(*std::max_element(one.begin(), one.end()) - 0.5) < 1e-9);
    // A stride samples the same schedule at steps 0, 7, 14, ... (long runs in the studio).
    auto sampled = train::preview_lr(adam, {"OneCycleLR", {{"max_lr", 0.5}}}, 100, 7);
    QCOMPARE(sampled.size(), size_t(15));
    for (size_t i = 0; i < sampled.size(); ++i)
        QCOMPARE(sampled[i], one[i * 7]);
}

QTEST_GUILESS_MAIN(TestProject)
#include "test_project.moc"
