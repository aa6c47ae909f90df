// The learning-rate range test (train/lr_finder.h): the suggestions from a curve whose answer is
// known, and real range tests on the shipped tabular example: exponentially growing learning
// rates, the bias-corrected smoothing, the stop when the loss diverges, and nothing written.
#include <myelin/error.h>
#include <myelin/io/project.h>
#include <myelin/train/lr_finder.h>

#include <QDir>
#include <QtTest>

#include <cmath>

using namespace myelin;
using namespace myelin::train;

namespace {

const std::string kExamples = std::string(MYELIN_SOURCE_DIR) + "/resources/examples";

// A curve over 1e-7..10 (100 points) that falls fastest at 1e-3 (a tanh step in log10 lr),
// is lowest near 1e-1 and rises after it.
LrFindResult synthetic_curve() {
    LrFindResult r;
    for (int i = 0; i < 100; ++i) {
        const double log_lr = -7.0 + 8.0 * i / 99.0;
        const double loss = 2.0 - std::tanh(2.0 * (log_lr + 3.0)) +
                            (log_lr > -1.0 ? 3.0 * (log_lr + 1.0) * (log_lr + 1.0) : 0.0);
        r.lrs.push_back(std::pow(10.0, log_lr));
        r.losses.push_back(loss);
        r.smoothed.push_back(loss);
    }
    return r;
}

} // namespace

class TestLrFinder : public QObject {
    Q_OBJECT

  private slots:
    void suggestionsOfAKnownCurve() {
        LrFindResult r = synthetic_curve();
        suggest_learning_rates(r);
        // One grid step is 8/99 of a decade.
        QVERIFY2(std::abs(std::log10(r.steepest_lr) + 3.0) <= 0.09,
                 qPrintable(QString::number(r.steepest_lr)));
        QVERIFY2(std::abs(std::log10(r.min_lr) + 1.0) <= 0.3,
                 qPrintable(QString::number(r.min_lr)));
        QCOMPARE(r.min_over_10, r.min_lr / 10);
        // Too short a curve says so instead of guessing.
        LrFindResult short_curve = synthetic_curve();
        short_curve.lrs.resize(8);
        short_curve.losses.resize(8);
        short_curve.smoothed.resize(8);
        suggest_learning_rates(short_curve);
        QCOMPARE(short_curve.steepest_lr, 0.0);
        QVERIFY(QString::fromStdString(short_curve.note).contains("too few steps"));
    }

    void rangeTestOnTheTabularExample() {
        const io::Project project = io::load_project(kExamples + "/tabular_regression.myelin");
        const io::Project before = project;
        const QStringList files = QDir(QString::fromStdString(kExamples)).entryList();
        LrFindOptions options;
        options.steps = 60;
        options.start_lr = 1e-6;
        options.end_lr = 1.0;
        int64_t reported = 0;
        options.progress = [&](int64_t step, double, double) { reported = step; };
        const LrFindResult r = find_learning_rate(project, kExamples, options);
        QVERIFY(!r.lrs.empty() && r.lrs.size() <= 60);
        QCOMPARE(reported, int64_t(r.lrs.size()));
        QCOMPARE(r.lrs.front(), 1e-6);
        // Exponential growth: the same ratio every step, 10^(6/59).
        for (size_t i = 1; i < r.lrs.size(); ++i)
            QVERIFY(std::abs(r.lrs[i] / r.lrs[i - 1] - std::pow(10.0, 6.0 / 59.0)) < 1e-9);
        QCOMPARE(r.smoothed.front(), r.losses.front()); // bias-corrected from the first step
        QVERIFY(r.losses.back() != r.losses.front());   // it trained
        QVERIFY(!r.note.empty());
        QVERIFY(project.train == before.train && project.model == before.model);
        QCOMPARE(QDir(QString::fromStdString(kExamples)).entryList(), files); // nothing written
    }

    // Plain SGD up to a learning rate of 1e6 on a regression: the loss explodes, and the test
    // stops there rather than running every step.
    void divergenceStopsTheTest() {
        io::Project project = io::load_project(kExamples + "/tabular_regression.myelin");
        project.train.optimizer = {"SGD", {}};
        LrFindOptions options;
        options.steps = 200;
        options.start_lr = 1e-5;
        options.end_lr = 1e6;
        const LrFindResult r = find_learning_rate(project, kExamples, options);
        QVERIFY(r.diverged);
        QVERIFY(r.lrs.size() < 200);
        QVERIFY2(QString::fromStdString(r.note).contains("learning rate"), r.note.c_str());
    }

    void badOptionsAreRefused() {
        const io::Project project = io::load_project(kExamples + "/tabular_regression.myelin");
        LrFindOptions options;
        options.start_lr = 1.0;
        options.end_lr = 0.1;
        QVERIFY_THROWS_EXCEPTION(Error, find_learning_rate(project, kExamples, options));
        options = {};
        options.steps = 1;
        QVERIFY_THROWS_EXCEPTION(Error, find_learning_rate(project, kExamples, options));
    }
};

QTEST_GUILESS_MAIN(TestLrFinder)
#include "test_lr_finder.moc"
