// Optimizer options described once (issue 40): each typed options struct lists its fields
// (optim/optim.h), and the kind's AttrDescs, its defaults, the project file, `myelin check`'s
// line and the typed options a project builds all follow from that list. A made-up option added
// in one place (a struct of this test) shows in each of them.
#include <myelin/graph/attributes.h>
#include <myelin/io/project.h>
#include <myelin/optim/optim.h>
#include <myelin/spec/components.h>
#include <myelin/spec/option_fields.h>
#include <myelin/tensor.h>

#include <QtTest>

#include <array>
#include <limits>

using namespace myelin;

namespace {

const std::string kExamples = std::string(MYELIN_SOURCE_DIR) + "/resources/examples";

// A made-up optimizer's options: `zeta` is written here and nowhere else.
struct MadeUpOptions {
    double lr = 0.05;
    double zeta = 0.25;
    bool flip = false;
    static const std::array<optim::OptionField<MadeUpOptions>, 3> fields;
};
const std::array<optim::OptionField<MadeUpOptions>, 3> MadeUpOptions::fields{{
    {"lr", &MadeUpOptions::lr, "Step.", 0.0, std::numeric_limits<double>::infinity(), true},
    {"zeta", &MadeUpOptions::zeta, "A made-up option.", 0.0, 1.0},
    {"flip", &MadeUpOptions::flip, "Another."},
}};

MadeUpOptions last_built; // what the factory read from the project

void register_made_up() {
    spec::OptimizerKind kind;
    kind.name = "TestMadeUp";
    kind.doc = "An optimizer of the test.";
    kind.options = spec::described<MadeUpOptions>();
    kind.build = [](const graph::Attrs& o, std::vector<optim::ParamGroup> groups) {
        last_built = spec::read_options<MadeUpOptions>(o);
        return std::make_unique<optim::SGD>(std::move(groups),
                                            optim::SGDOptions{.lr = last_built.lr});
    };
    spec::register_kind(std::move(kind));
}

template <class O> void check_builtin(const char* name, const O& defaults) {
    const spec::OptimizerKind* kind = spec::find_component(spec::optimizer_kinds(), name);
    QVERIFY2(kind, name);
    QCOMPARE(kind->options.size(), O::fields.size());
    for (size_t i = 0; i < O::fields.size(); ++i)
        QCOMPARE(kind->options[i].name, std::string(O::fields[i].name));
    // The kind's defaults, read into the typed options, are the struct's own.
    const O read = spec::read_options<O>(graph::with_defaults(kind->options, {}));
    QVERIFY2(read.to_map() == defaults.to_map(), name);
}

} // namespace

class TestOptionFields : public QObject {
    Q_OBJECT

  private slots:
    void builtinKindsFollowTheirFields() {
        check_builtin<optim::AdamOptions>("Adam", {});
        check_builtin("AdamW", optim::adamw_defaults());
        check_builtin<optim::SGDOptions>("SGD", {});
        check_builtin<optim::RMSpropOptions>("RMSprop", {});
        check_builtin<optim::AdagradOptions>("Adagrad", {});
        // The range and the doc come along: lr must be above 0.
        const auto* adam = spec::find_component(spec::optimizer_kinds(), "Adam");
        QVERIFY(!adam->options[0].check(0.0).empty());
        QVERIFY(adam->options[0].check(1e-3).empty());
        QCOMPARE(adam->options[0].doc, std::string("Learning rate."));
    }

    void aMadeUpOptionShowsEverywhere() {
        register_made_up();
        const spec::OptimizerKind* kind =
            spec::find_component(spec::optimizer_kinds(), "TestMadeUp");
        QVERIFY(kind);
        // The description: a default from the struct, its range.
        QCOMPARE(kind->options.at(1).name, std::string("zeta"));
        QVERIFY(!kind->options.at(1).check(1.5).empty());
        // `myelin check`'s line (app/cli/main.cpp prints describe_options).
        QCOMPARE(spec::describe_options(kind->options, {}),
                 std::string("lr 0.05, zeta 0.25, flip false"));
        // The project file writes and reads it.
        io::Project project = io::load_project(kExamples + "/fashion_mlp.myelin");
        project.train.optimizer = spec::Choice{"TestMadeUp", {{"zeta", 0.75}}};
        const std::string text = io::serialize_project(project);
        QVERIFY2(text.find("\"zeta\": 0.75") != std::string::npos, text.c_str());
        const io::Project again = io::parse_project(text);
        QCOMPARE(again.train.optimizer.options.get_float("zeta"), 0.75);
        // The typed options a project builds.
        Tensor w = zeros({2}).requires_grad_();
        kind->build(graph::with_defaults(kind->options, again.train.optimizer.options),
                    {optim::ParamGroup{{w}, {}}});
        QCOMPARE(last_built.zeta, 0.75);
        QCOMPARE(last_built.lr, 0.05);
        QCOMPARE(optim::options_map(last_built).at("zeta"), 0.75);
    }
};

QTEST_GUILESS_MAIN(TestOptionFields)
#include "test_option_fields.moc"
