// Loss weights end to end: class weights by name, pos_weight and weight by position in the
// project format (round-trip, refusals naming the loss, the option and the class), the built
// loss in class order and the model's dtype, a trainer run whose first loss is the functional's
// with the same weight tensor to the bit, balance-classes weights from known counts, and the
// text `myelin check` / `train` print.
#include <myelin/error.h>
#include <myelin/io/project.h>
#include <myelin/nn/loss.h>
#include <myelin/tensor.h>
#include <myelin/train/callbacks.h>
#include <myelin/train/class_weights.h>
#include <myelin/train/components.h>
#include <myelin/train/evaluation.h>
#include <myelin/train/trainer.h>

#include <QTemporaryDir>
#include <QtTest>

#include "test_support.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>

using namespace myelin;
using graph::NumberTable;

namespace {

// A minimal project whose training.loss is `loss` (JSON text).
std::string with_loss(const std::string& loss) {
    return R"({
  "format_version": 1,
  "model": {
    "nodes": [
      {"id": 1, "kind": "Input", "attrs": {"shape": [4]}},
      {"id": 2, "kind": "Linear", "attrs": {"in_features": 4, "out_features": 3}},
      {"id": 3, "kind": "Output"}
    ],
    "edges": [{"from": 1, "to": 2}, {"from": 2, "to": 3}]
  },
  "data": {"source": {"kind": "fashion-mnist"}},
  "training": {"loss": )" +
           loss + R"(, "optimizer": {"kind": "SGD", "lr": 0.1}}
})";
}

QString parse_error(const std::string& loss) {
    return error_of<io::ProjectError>([&] { io::parse_project(with_loss(loss), "p.myelin"); });
}

// `counts[c]` rows of class "abc"[c], 4 features near a per-class centre.
void write_csv(const std::string& path, const std::vector<int>& counts) {
    std::mt19937 rng(3);
    std::normal_distribution<double> noise(0.0, 0.6);
    std::ofstream out(path);
    out << "x0,x1,x2,x3,label\n";
    int left[3] = {counts[0], counts[1], counts[2]};
    for (int i = 0; left[0] + left[1] + left[2] > 0; ++i) {
        const int c = i % 3;
        if (left[c] == 0) continue;
        --left[c];
        for (int d = 0; d < 4; ++d)
            out << (d == c ? 2.0 : 0.0) + noise(rng) << ",";
        out << "abc"[c] << "\n";
    }
}

io::Project csv_project(const std::string& csv, spec::Choice loss) {
    io::Project p;
    auto& m = p.model;
    auto in = m.add_node("Input", "", {{"shape", std::vector<int64_t>{4}}});
    auto fc1 =
        m.add_node("Linear", "fc1", {{"in_features", int64_t(4)}, {"out_features", int64_t(8)}});
    auto act = m.add_node("ReLU", "act");
    auto fc2 =
        m.add_node("Linear", "fc2", {{"in_features", int64_t(8)}, {"out_features", int64_t(3)}});
    auto out = m.add_node("Output");
    m.connect(in, fc1);
    m.connect(fc1, act);
    m.connect(act, fc2);
    m.connect(fc2, out);
    p.data.source = {"csv",
                     {{"path", csv},
                      {"target_column", std::string("label")},
                      {"task", std::string("classification")},
                      {"test_fraction", 0.2}}};
    p.data.validation_fraction = 0.2;
    p.data.batch_size = 16;
    p.data.num_workers = 0;
    p.train.loss = std::move(loss);
    p.train.optimizer = {"SGD", {{"lr", 0.05}}};
    p.train.epochs = 1;
    p.train.seed = 11;
    p.train.capture.summaries_every = 0;
    p.train.capture.feature_maps_every = 0;
    return p;
}

// Keeps the first forward pass of a run.
struct FirstPass final : train::TrainerCallback {
    Tensor output, target, loss;
    void after_forward(train::Trainer&, const train::ForwardPass& pass) override {
        if (output.defined()) return;
        output = pass.output.detach().clone();
        target = pass.batch.target.clone();
        loss = pass.loss.detach().clone();
    }
};

uint32_t bits(float v) {
    uint32_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
}

NumberTable named(std::vector<std::pair<std::string, double>> entries) {
    NumberTable t;
    t.by_name = std::move(entries);
    return t;
}
NumberTable listed(std::vector<double> values) {
    NumberTable t;
    t.by_position = std::move(values);
    return t;
}

} // namespace

class TestLossWeights : public QObject {
    Q_OBJECT

  private slots:
    void optionsRoundTrip();
    void badInputIsRefused();
    void weightsFollowClassOrderAndDtype();
    void unknownClassIsRefusedBeforeTraining();
    void firstLossEqualsTheFunctional();
    void balancedWeightsFromCounts();
    void weightsDescribedAndDiffed();
};

void TestLossWeights::optionsRoundTrip() {
    for (const std::string loss : {
             R"({"kind": "CrossEntropyLoss", "weight": {"Coat": 2.0, "Bag": 0.25}})",
             R"({"kind": "NLLLoss", "weight": {"Trouser": 3}})",
             R"({"kind": "BCEWithLogitsLoss", "pos_weight": [2.0, 0.5], "weight": [1, 3]})",
             R"({"kind": "BCEWithLogitsLoss", "pos_weight": {"yes": 4.5}})",
             R"({"kind": "BCELoss", "weight": [0.25]})",
         }) {
        const io::Project p = io::parse_project(with_loss(loss), "p.myelin");
        const std::string once = io::serialize_project(p);
        const io::Project again = io::parse_project(once, "p.myelin");
        QVERIFY2(again == p, loss.c_str());
        QCOMPARE(QString::fromStdString(io::serialize_project(again)),
                 QString::fromStdString(once));
    }
    const io::Project ce = io::parse_project(
        with_loss(R"({"kind": "CrossEntropyLoss", "weight": {"Coat": 2.0, "Bag": 0.25}})"));
    QVERIFY(ce.train.loss.options.get_table("weight") == named({{"Coat", 2.0}, {"Bag", 0.25}}));
    const io::Project bce =
        io::parse_project(with_loss(R"({"kind": "BCEWithLogitsLoss", "pos_weight": [2, 0.5]})"));
    QVERIFY(bce.train.loss.options.get_table("pos_weight") == listed({2.0, 0.5}));
    QVERIFY(bce.train.loss.options.get_table("weight").empty());
    // No weights (the default) writes no key: files from before stay byte-stable.
    const io::Project plain = io::parse_project(with_loss(R"({"kind": "CrossEntropyLoss"})"));
    QVERIFY(plain.train.loss.options.get_table("weight").empty());
    QVERIFY(io::serialize_project(plain).find("\"weight\"") == std::string::npos);
    QVERIFY(io::serialize_project(ce).find("\"weight\": {\n") != std::string::npos ||
            io::serialize_project(ce).find("\"weight\": {\"Coat\"") != std::string::npos);
}

void TestLossWeights::badInputIsRefused() {
    QString e = parse_error(R"({"kind": "CrossEntropyLoss", "weight": {"Coat": -1}})");
    QVERIFY2(e.contains("p.myelin:training.loss.weight: CrossEntropyLoss weight: 'Coat': must be "
                        "a finite number >= 0, got -1"),
             qPrintable(e));
    e = parse_error(R"({"kind": "NLLLoss", "weight": {"Coat": "heavy"}})");
    QVERIFY2(e.contains("training.loss.weight.Coat: expected a number"), qPrintable(e));
    e = parse_error(R"({"kind": "CrossEntropyLoss", "weight": [1, 2]})");
    QVERIFY2(e.contains("CrossEntropyLoss weight: must give numbers by name"), qPrintable(e));
    e = parse_error(R"({"kind": "BCEWithLogitsLoss", "pos_weight": [1, -0.5]})");
    QVERIFY2(e.contains("BCEWithLogitsLoss pos_weight: [1]: must be a finite number >= 0"),
             qPrintable(e));
    e = parse_error(R"({"kind": "MSELoss", "weight": {"Coat": 1}})");
    QVERIFY2(e.contains("unknown option of MSELoss"), qPrintable(e));
    e = parse_error(R"({"kind": "CrossEntropyLoss", "label_smoothing": {"Coat": 1}})");
    QVERIFY2(e.contains("training.loss.label_smoothing"), qPrintable(e));

    // Built in code (the studio, plugins): NaN and infinity are refused by name too.
    spec::LossContext abc{{"a", "b", "c"}, 3, DType::Float32};
    const double nan = std::numeric_limits<double>::quiet_NaN();
    e = error_of<Error>([&] {
        train::make_loss({"CrossEntropyLoss", {{"weight", named({{"b", nan}})}}}, abc);
    });
    QVERIFY2(e.contains("CrossEntropyLoss: weight: 'b': must be a finite number >= 0, got nan"),
             qPrintable(e));
    e = error_of<Error>([&] {
        train::make_loss(
            {"BCELoss", {{"weight", listed({std::numeric_limits<double>::infinity()})}}}, abc);
    });
    QVERIFY2(e.contains("BCELoss: weight: [0]: must be a finite number"), qPrintable(e));
    // Unknown class: named, with the data's classes.
    e = error_of<Error>([&] {
        train::make_loss({"NLLLoss", {{"weight", named({{"a", 1.0}, {"d", 2.0}})}}}, abc);
    });
    QVERIFY2(e.contains("NLLLoss weight: the data has no class 'd' (its classes: a, b, c)"),
             qPrintable(e));
    // A list must give one number per output.
    e = error_of<Error>([&] {
        train::make_loss({"BCEWithLogitsLoss", {{"pos_weight", listed({1, 2, 3, 4})}}}, abc);
    });
    QVERIFY2(e.contains("BCEWithLogitsLoss pos_weight: 4 numbers given, but the model has 3 "
                        "outputs (one number each)"),
             qPrintable(e));
    // Names need data with class names.
    e = error_of<Error>([&] {
        train::make_loss({"BCEWithLogitsLoss", {{"pos_weight", named({{"yes", 2.0}})}}},
                         {{}, 1, DType::Float32});
    });
    QVERIFY2(e.contains("the data has no class names"), qPrintable(e));
}

void TestLossWeights::weightsFollowClassOrderAndDtype() {
    spec::LossContext abc{{"a", "b", "c"}, 3, DType::Float32};
    auto loss =
        train::make_loss({"CrossEntropyLoss", {{"weight", named({{"c", 3.0}, {"a", 0.5}})}}}, abc);
    auto* ce = dynamic_cast<const nn::CrossEntropyLoss*>(loss.get());
    QVERIFY(ce != nullptr);
    const Tensor w = ce->options().weight;
    QCOMPARE(w.dtype(), DType::Float32);
    QCOMPARE(w.numel(), int64_t(3));
    QCOMPARE(w.to(DType::Float64).contiguous().data<double>()[0], 0.5);
    QCOMPARE(w.to(DType::Float64).contiguous().data<double>()[1], 1.0); // not named: 1
    QCOMPARE(w.to(DType::Float64).contiguous().data<double>()[2], 3.0);
    // A float64 model gets float64 weights, exactly the numbers written.
    abc.dtype = DType::Float64;
    loss = train::make_loss({"NLLLoss", {{"weight", named({{"b", 0.1}})}}}, abc);
    const Tensor w64 = dynamic_cast<const nn::NLLLoss&>(*loss).options().weight;
    QCOMPARE(w64.dtype(), DType::Float64);
    QCOMPARE(w64.contiguous().data<double>()[1], 0.1);
    // No weights: PyTorch's None.
    loss = train::make_loss({"CrossEntropyLoss", {}}, abc);
    QVERIFY(!dynamic_cast<const nn::CrossEntropyLoss&>(*loss).options().weight.defined());
    // pos_weight and weight by position, in order.
    loss = train::make_loss(
        {"BCEWithLogitsLoss", {{"pos_weight", listed({2, 0.5, 1})}, {"weight", listed({1, 1, 4})}}},
        abc);
    const auto& bce = dynamic_cast<const nn::BCEWithLogitsLoss&>(*loss).options();
    QCOMPARE(bce.pos_weight.contiguous().data<double>()[0], 2.0);
    QCOMPARE(bce.weight.contiguous().data<double>()[2], 4.0);
}

void TestLossWeights::unknownClassIsRefusedBeforeTraining() {
    QTemporaryDir dir;
    const std::string csv = dir.filePath("d.csv").toStdString();
    write_csv(csv, {40, 40, 40});
    io::Project p = csv_project(csv, {"CrossEntropyLoss", {{"weight", named({{"Coat", 2.0}})}}});
    const QString e = error_of<Error>([&] { train::Trainer t(p, {}); });
    QVERIFY2(e.contains("CrossEntropyLoss weight: the data has no class 'Coat' (its classes: a, "
                        "b, c)"),
             qPrintable(e));
    // myelin check's path: the context read from the project alone.
    const spec::LossContext c = train::loss_context_for(p.train, p.data, p.model, ".");
    QCOMPARE(c.class_names, (std::vector<std::string>{"a", "b", "c"}));
    QCOMPARE(c.outputs, int64_t(3));
    QVERIFY(error_of<Error>([&] { train::make_loss(p.train.loss, c); }).contains("'Coat'"));
}

void TestLossWeights::firstLossEqualsTheFunctional() {
    QTemporaryDir dir;
    const std::string csv = dir.filePath("d.csv").toStdString();
    write_csv(csv, {90, 40, 20});
    for (const bool smoothing : {false, true}) {
        spec::Choice loss{"CrossEntropyLoss",
                          {{"weight", named({{"c", 3.0}, {"a", 0.4}})},
                           {"label_smoothing", smoothing ? 0.15 : 0.0}}};
        io::Project p = csv_project(csv, loss);
        train::Trainer t(p, {});
        QCOMPARE(t.loss_context().class_names, (std::vector<std::string>{"a", "b", "c"}));
        QCOMPARE(t.loss_context().outputs, int64_t(3));
        auto first = std::make_shared<FirstPass>();
        t.add_callback(first);
        const train::TrainResult result = t.run();
        QVERIFY(first->output.defined());

        nn::functional::CrossEntropyOptions o;
        o.weight = from_vector(std::vector<double>{0.4, 1.0, 3.0}, {3}).to(DType::Float32);
        o.label_smoothing = smoothing ? 0.15 : 0.0;
        const Tensor expected = nn::functional::cross_entropy(first->output, first->target, o);
        QCOMPARE(bits(first->loss.item<float>()), bits(expected.item<float>()));
        // The weights matter: the unweighted loss of the same batch differs.
        nn::functional::CrossEntropyOptions plain;
        plain.label_smoothing = o.label_smoothing;
        QVERIFY(nn::functional::cross_entropy(first->output, first->target, plain).item<float>() !=
                expected.item<float>());

        // Evaluation keeps the weights: per-example losses are weight[target] * NLL.
        const train::Evaluation ev = train::evaluate_examples(t, t.data().test, {});
        QVERIFY(!ev.losses.empty());
        for (double l : ev.losses)
            QVERIFY(std::isfinite(l));
    }
}

void TestLossWeights::balancedWeightsFromCounts() {
    // sklearn: n_samples / (n_classes * count_c), over the classes present.
    const std::vector<double> w = train::balanced_class_weights({6, 3, 1, 0});
    QCOMPARE(w.size(), size_t(4));
    QCOMPARE(w[0], 10.0 / (3 * 6));
    QCOMPARE(w[1], 10.0 / (3 * 3));
    QCOMPARE(w[2], 10.0 / (3 * 1));
    QCOMPARE(w[3], 1.0);
    // Balanced data: every weight 1.
    for (double v : train::balanced_class_weights({5, 5}))
        QCOMPARE(v, 1.0);

    // The training split's counts, read from the data (no hold-outs: all rows).
    QTemporaryDir dir;
    const std::string csv = dir.filePath("d.csv").toStdString();
    write_csv(csv, {12, 6, 2});
    io::Project p = csv_project(csv, {"CrossEntropyLoss", {}});
    p.data.validation_fraction = 0;
    p.data.source.options.set("test_fraction", 0.0);
    const train::ClassCounts counts = train::training_class_counts(p.data, ".", 1);
    QCOMPARE(counts.names, (std::vector<std::string>{"a", "b", "c"}));
    QCOMPARE(counts.counts, (std::vector<int64_t>{12, 6, 2}));
    const std::vector<double> b = train::balanced_class_weights(counts.counts);
    QCOMPARE(b, (std::vector<double>{20.0 / 36, 20.0 / 18, 20.0 / 6}));
}

void TestLossWeights::weightsDescribedAndDiffed() {
    const spec::LossContext abc{{"a", "b", "c"}, 3, DType::Float32};
    const spec::Choice ce{"CrossEntropyLoss", {{"weight", named({{"c", 3.0}, {"a", 0.5}})}}};
    auto lines = train::describe_loss_weights(ce, abc);
    QCOMPARE(lines.size(), size_t(1));
    QCOMPARE(QString::fromStdString(lines[0]), QStringLiteral("weight: a 0.5, b 1, c 3"));
    lines = train::describe_loss_weights(
        {"BCEWithLogitsLoss", {{"pos_weight", listed({2, 0.5, 1})}}}, abc);
    QCOMPARE(QString::fromStdString(lines[0]), QStringLiteral("pos_weight: [0] 2, [1] 0.5, [2] 1"));
    QVERIFY(train::describe_loss_weights({"CrossEntropyLoss", {}}, abc).empty());

    // A fork shows a changed weight as a project change.
    io::Project before = io::parse_project(with_loss(R"({"kind": "CrossEntropyLoss"})"));
    io::Project after = before;
    after.train.loss.options.set("weight", named({{"Coat", 2.0}}));
    const auto changes = io::project_changes(before, after);
    QCOMPARE(changes.size(), size_t(1));
    QCOMPARE(QString::fromStdString(changes[0].path), QStringLiteral("training.loss.weight"));
    QCOMPARE(QString::fromStdString(changes[0].after), QStringLiteral("{\"Coat\":2.0}"));
}

QTEST_GUILESS_MAIN(TestLossWeights)
#include "test_loss_weights.moc"
