// Optimizer and schedule options described once (issue 40): each typed options struct lists its
// fields (optim/option_field.h), and the kind's AttrDescs, its defaults, the project file,
// `myelin check`'s line and the typed options a project builds all follow from that list. A
// made-up option added in one place (a struct of this test) shows in each of them.
#include <myelin/error.h>
#include <myelin/graph/attributes.h>
#include <myelin/io/project.h>
#include <myelin/optim/optim.h>
#include <myelin/optim/scheduler.h>
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

// A made-up schedule's options: `zeta`, `shape` and `marks` are written here and nowhere else.
struct MadeUpScheduleOptions {
    int64_t every = 4;
    double zeta = 0.25;
    enum class Shape { Flat, Steep } shape = Shape::Flat;
    std::vector<int64_t> marks{2, 5};
    static const std::array<optim::OptionField<MadeUpScheduleOptions>, 4> fields;
};
constexpr std::array<const char*, 2> kShapeNames{"flat", "steep"};
const std::array<optim::OptionField<MadeUpScheduleOptions>, 4> MadeUpScheduleOptions::fields{{
    {"every", &MadeUpScheduleOptions::every, "Steps between halvings.", 1},
    {"zeta", &MadeUpScheduleOptions::zeta, "A made-up option.", 0.0, 1.0},
    {"shape", optim::enum_member<&MadeUpScheduleOptions::shape>(kShapeNames), "A made-up choice."},
    {"marks", &MadeUpScheduleOptions::marks, "Made-up steps.", 0.0,
     std::numeric_limits<double>::infinity(), false, 1, 4},
}};

MadeUpScheduleOptions last_schedule; // what the schedule's factory read from the project

void register_made_up_schedule() {
    spec::SchedulerKind kind;
    kind.name = "TestMadeUpSchedule";
    kind.doc = "A schedule of the test.";
    kind.options = spec::described<MadeUpScheduleOptions>();
    kind.build = [](const graph::Attrs& o, optim::Optimizer& opt, int64_t) {
        last_schedule = spec::read_options<MadeUpScheduleOptions>(o);
        return std::make_shared<optim::StepLR>(
            opt, optim::StepLROptions{.step_size = last_schedule.every, .gamma = 0.5});
    };
    spec::register_kind(std::move(kind));
}

bool same_desc(const graph::AttrDesc& a, const graph::AttrDesc& b) {
    return a.name == b.name && a.type == b.type && a.default_value == b.default_value &&
           a.doc == b.doc && a.min == b.min && a.max == b.max &&
           a.min_exclusive == b.min_exclusive && a.max_exclusive == b.max_exclusive &&
           a.choices == b.choices && a.list_min_size == b.list_min_size &&
           a.list_max_size == b.list_max_size;
}

// A built-in schedule kind's own options are its typed options' fields (the warmup's follow for
// a step-driven one), and its defaults read into the typed options describe the same defaults.
template <class O> void check_builtin_schedule(const char* name, bool step_driven = true) {
    const spec::SchedulerKind* kind = spec::find_component(spec::scheduler_kinds(), name);
    QVERIFY2(kind, name);
    const std::vector<graph::AttrDesc> own = spec::described<O>();
    QCOMPARE(own.size(), O::fields.size());
    QCOMPARE(kind->options.size(), own.size() + (step_driven ? 2 : 0));
    for (size_t i = 0; i < own.size(); ++i) {
        QCOMPARE(kind->options[i].name, std::string(O::fields[i].name));
        QVERIFY2(same_desc(kind->options[i], own[i]), O::fields[i].name);
    }
    if (step_driven) QCOMPARE(kind->options[own.size()].name, std::string("warmup"));
    const O read = spec::read_options<O>(graph::with_defaults(kind->options, {}));
    const std::vector<graph::AttrDesc> again = spec::described(read);
    for (size_t i = 0; i < own.size(); ++i)
        QVERIFY2(again[i].default_value == own[i].default_value, O::fields[i].name);
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

    void builtinSchedulesFollowTheirFields() {
        check_builtin_schedule<optim::StepLROptions>("StepLR");
        check_builtin_schedule<optim::MultiStepLROptions>("MultiStepLR");
        check_builtin_schedule<optim::ExponentialLROptions>("ExponentialLR");
        check_builtin_schedule<optim::CosineAnnealingLROptions>("CosineAnnealingLR");
        check_builtin_schedule<optim::CosineAnnealingWarmRestartsOptions>(
            "CosineAnnealingWarmRestarts");
        check_builtin_schedule<optim::OneCycleOptions>("OneCycleLR");
        check_builtin_schedule<optim::LinearLROptions>("LinearLR");
        check_builtin_schedule<optim::ConstantLROptions>("ConstantLR");
        check_builtin_schedule<optim::ReduceLROnPlateauOptions>("ReduceLROnPlateau", false);
        // Integers, lists and choices keep the file's form: OneCycleLR's anneal_strategy is a
        // choice, MultiStepLR's milestones a list of up to 32 steps.
        const auto* one_cycle = spec::find_component(spec::scheduler_kinds(), "OneCycleLR");
        QCOMPARE(spec::describe_options(one_cycle->options, {{"anneal_strategy", "linear"}}),
                 std::string("max_lr 0.01, pct_start 0.3, anneal_strategy \"linear\", "
                             "cycle_momentum true, base_momentum 0.85, max_momentum 0.95, "
                             "div_factor 25, final_div_factor 10000, three_phase false, "
                             "warmup 0, warmup_start_factor 0.1"));
        const auto read = spec::read_options<optim::OneCycleOptions>(graph::with_defaults(
            one_cycle->options, {{"anneal_strategy", "linear"}, {"max_lr", 0.5}}));
        QVERIFY(read.anneal_strategy == optim::AnnealStrategy::Linear);
        QCOMPARE(read.max_lr, 0.5);
        QVERIFY(read.max_lr_per_group.empty());
        const auto* multi = spec::find_component(spec::scheduler_kinds(), "MultiStepLR");
        QCOMPARE(multi->options[0].list_max_size, 32);
        QVERIFY(multi->options[0].default_value == graph::AttrValue(std::vector<int64_t>{30, 80}));
        // The warmup every step-driven kind gets is described once too.
        const auto warmup = spec::read_options<optim::WarmupOptions>(
            graph::with_defaults(multi->options, {{"warmup", int64_t(7)}}));
        QCOMPARE(warmup.warmup, int64_t(7));
        QCOMPARE(warmup.warmup_start_factor, 0.1);
    }

    void aMadeUpScheduleOptionShowsEverywhere() {
        register_made_up_schedule();
        const spec::SchedulerKind* kind =
            spec::find_component(spec::scheduler_kinds(), "TestMadeUpSchedule");
        QVERIFY(kind);
        // The description: defaults from the struct, ranges, the choice's names, the list's size.
        QCOMPARE(kind->options.size(), size_t(6)); // with the warmup's two
        QCOMPARE(kind->options.at(1).name, std::string("zeta"));
        QVERIFY(!kind->options.at(1).check(1.5).empty());
        QVERIFY(!kind->options.at(0).check(int64_t(0)).empty());
        QCOMPARE(kind->options.at(2).type, graph::AttrType::Enum);
        QCOMPARE(kind->options.at(2).choices, (std::vector<std::string>{"flat", "steep"}));
        QVERIFY(!kind->options.at(2).check(std::string("round")).empty());
        QCOMPARE(kind->options.at(3).type, graph::AttrType::IntList);
        QVERIFY(!kind->options.at(3).check(std::vector<int64_t>{1, 2, 3, 4, 5}).empty());
        // `myelin check`'s line.
        QCOMPARE(spec::describe_options(kind->options, {}),
                 std::string("every 4, zeta 0.25, shape \"flat\", marks [2, 5], warmup 0, "
                             "warmup_start_factor 0.1"));
        // The project file writes and reads them.
        io::Project project = io::load_project(kExamples + "/fashion_mlp.myelin");
        project.train.scheduler =
            spec::Choice{"TestMadeUpSchedule",
                         {{"zeta", 0.75}, {"shape", "steep"}, {"marks", std::vector<int64_t>{3}}}};
        const std::string text = io::serialize_project(project);
        QVERIFY2(text.find("\"zeta\": 0.75") != std::string::npos, text.c_str());
        QVERIFY2(text.find("\"shape\": \"steep\"") != std::string::npos, text.c_str());
        const io::Project again = io::parse_project(text);
        QVERIFY(again.train.scheduler);
        QCOMPARE(again.train.scheduler->options.get_float("zeta"), 0.75);
        // The typed options a project builds.
        Tensor w = zeros({2}).requires_grad_();
        optim::SGD sgd(std::vector<optim::ParamGroup>{optim::ParamGroup{{w}, {}}},
                       optim::SGDOptions{});
        kind->build(graph::with_defaults(kind->options, again.train.scheduler->options), sgd, 10);
        QCOMPARE(last_schedule.zeta, 0.75);
        QVERIFY(last_schedule.shape == MadeUpScheduleOptions::Shape::Steep);
        QCOMPARE(last_schedule.marks, (std::vector<int64_t>{3}));
        QCOMPARE(last_schedule.every, int64_t(4));
        // A choice that is none of the names (only unchecked options can hold one) is refused.
        graph::Attrs unchecked = graph::with_defaults(kind->options, {});
        unchecked.set("shape", std::string("round"));
        QVERIFY_THROWS_EXCEPTION(Error, spec::read_options<MadeUpScheduleOptions>(unchecked));
    }
};

QTEST_GUILESS_MAIN(TestOptionFields)
#include "test_option_fields.moc"
