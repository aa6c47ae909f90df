// The trainer's building blocks: streaming metrics against hand-computed values, tensor summaries
// and norms against brute-force double computations, the event queue's drop policy and ordering
// under threads, the progress tracker on a fake clock, and early stopping sequences.
#include <myelin/data/sampler.h>
#include <myelin/device.h>
#include <myelin/error.h>
#include <myelin/io/project.h>
#include <myelin/spec/components.h>
#include <myelin/tensor.h>
#include <myelin/train/capture.h>
#include <myelin/train/data_setup.h>
#include <myelin/train/early_stopping.h>
#include <myelin/train/events.h>
#include <myelin/train/metrics.h>
#include <myelin/train/store_sink.h>
#include <myelin/train/trainer.h>

#include <QtTest>

#include "test_support.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <random>
#include <thread>

using namespace myelin;
using namespace myelin::train;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

bool close_to(double a, double b, double rel = 1e-12, double abs_tol = 1e-12) {
    return std::abs(a - b) <= abs_tol + rel * std::abs(b);
}

// Logits [N, C] whose argmax is predictions[i] (1.0 there, 0.1 * j elsewhere, all below 1).
Tensor logits_predicting(const std::vector<int64_t>& predictions, int64_t classes) {
    std::vector<float> v;
    for (int64_t p : predictions)
        for (int64_t j = 0; j < classes; ++j)
            v.push_back(j == p ? 1.0f : 0.1f * float(j) / float(classes));
    return from_vector(v, {int64_t(predictions.size()), classes});
}

Tensor labels(const std::vector<int64_t>& v) {
    return from_vector(v, {int64_t(v.size())});
}

// The reference: argmax (first maximum) and accuracy computed straight from the values.
struct ReferenceClassification {
    std::vector<int64_t> confusion;
    int64_t correct = 0, top5 = 0;
};
ReferenceClassification reference_classification(const std::vector<float>& logits,
                                                 const std::vector<int64_t>& targets,
                                                 int64_t classes) {
    ReferenceClassification r;
    r.confusion.assign(size_t(classes * classes), 0);
    for (size_t i = 0; i < targets.size(); ++i) {
        const float* row = logits.data() + i * size_t(classes);
        const int64_t predicted = std::max_element(row, row + classes) - row;
        int64_t rank = 0; // classes ordered before the target: larger, or equal with lower index
        for (int64_t j = 0; j < classes; ++j)
            rank += row[j] > row[targets[i]] || (row[j] == row[targets[i]] && j < targets[i]);
        ++r.confusion[size_t(targets[i] * classes + predicted)];
        r.correct += predicted == targets[i];
        r.top5 += rank < 5;
    }
    return r;
}

std::vector<double> random_values(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal(0.5, 2.0);
    std::vector<double> v(n);
    for (double& x : v)
        x = normal(rng);
    return v;
}

// Everything summarize() reports, computed the obvious way from doubles.
struct ReferenceSummary {
    int64_t finite = 0, nan = 0, inf = 0, zero = 0;
    double mean = 0, std = 0, min = 0, max = 0, low = 0, high = 1;
    std::vector<double> edges;
    std::vector<int64_t> histogram;
};
ReferenceSummary reference_summary(const std::vector<double>& v, int bins) {
    ReferenceSummary r;
    std::vector<double> finite;
    for (double x : v) {
        if (std::isnan(x))
            ++r.nan;
        else if (std::isinf(x))
            ++r.inf;
        else
            finite.push_back(x);
        r.zero += x == 0.0;
    }
    r.finite = int64_t(finite.size());
    r.histogram.assign(size_t(bins), 0);
    if (!finite.empty()) {
        double sum = 0;
        for (double x : finite)
            sum += x;
        r.mean = sum / double(finite.size());
        double m2 = 0;
        for (double x : finite)
            m2 += (x - r.mean) * (x - r.mean);
        r.std = finite.size() > 1 ? std::sqrt(m2 / double(finite.size() - 1)) : 0.0;
        r.min = *std::min_element(finite.begin(), finite.end());
        r.max = *std::max_element(finite.begin(), finite.end());
        r.low = r.min;
        r.high = r.max;
        if (r.low == r.high) {
            r.low -= 0.5;
            r.high += 0.5;
        }
    }
    // numpy.linspace's edges, and bins found by searching them (no arithmetic shortcut).
    const double step = (r.high - r.low) / bins;
    for (int k = 0; k < bins; ++k)
        r.edges.push_back(r.low + k * step);
    r.edges.push_back(r.high);
    for (double x : finite) {
        int64_t k = std::upper_bound(r.edges.begin(), r.edges.end(), x) - r.edges.begin() - 1;
        ++r.histogram[size_t(std::min<int64_t>(k, bins - 1))];
    }
    return r;
}

void expect_summary(const TensorSummary& s, const std::vector<double>& values, int bins,
                    double rel = 1e-12) {
    const ReferenceSummary r = reference_summary(values, bins);
    QCOMPARE(s.numel, int64_t(values.size()));
    QCOMPARE(s.finite_count, r.finite);
    QCOMPARE(s.nan_count, r.nan);
    QCOMPARE(s.inf_count, r.inf);
    QCOMPARE(s.nonfinite_count(), r.nan + r.inf);
    QCOMPARE(s.zero_count, r.zero);
    QVERIFY2(close_to(s.mean, r.mean, rel),
             qPrintable(QString("mean %1 vs %2").arg(s.mean).arg(r.mean)));
    QVERIFY2(close_to(s.std, r.std, rel),
             qPrintable(QString("std %1 vs %2").arg(s.std).arg(r.std)));
    QVERIFY(s.min == r.min && s.max == r.max); // exact (QCOMPARE on doubles is fuzzy)
    QVERIFY(s.hist_low == r.low && s.hist_high == r.high);
    QCOMPARE(s.bin_edges(), r.edges);
    QCOMPARE(s.histogram, r.histogram);
    int64_t total = 0;
    for (int64_t c : s.histogram)
        total += c;
    QCOMPARE(total, r.finite);
}

std::vector<double> as_doubles(const Tensor& t) {
    return t.to(DType::Float64).contiguous().to_vector<double>();
}

Event step_event(int64_t step) {
    StepMetrics m;
    m.step = step;
    return Event(std::move(m));
}
Event epoch_event(int64_t epoch) {
    EpochMetrics m;
    m.epoch = epoch;
    return Event(std::move(m));
}
// The step or epoch number an event was made with.
int64_t number_of(const Event& e) {
    if (auto* s = e.get<StepMetrics>()) return s->step;
    if (auto* m = e.get<EpochMetrics>()) return m->epoch;
    return -1;
}

} // namespace

class TestTrainParts : public QObject {
    Q_OBJECT

  private slots:
    void dataSourcesSayWhichOptionsArePaths() {
        using Path = graph::AttrDesc::Path;
        const auto path_of = [](const char* source, const char* option) {
            const auto* kind = spec::find_component(spec::data_source_kinds(), source);
            for (const auto& o : kind->options)
                if (o.name == option) return o.path;
            return Path::None;
        };
        QCOMPARE(path_of("csv", "path"), Path::File);
        QCOMPARE(path_of("csv", "target_column"), Path::None);
        QCOMPARE(path_of("image-folder", "root"), Path::Folder);
        QCOMPARE(path_of("fashion-mnist", "directory"), Path::Folder);
        QCOMPARE(path_of("idx", "test_labels"), Path::File);
        QCOMPARE(path_of("npy", "targets"), Path::File);
        // Every path option is a string.
        for (const auto& kind : spec::data_source_kinds())
            for (const auto& o : kind.options)
                if (o.path != Path::None) QCOMPARE(int(o.type), int(graph::AttrType::String));
    }

    void stepsPerEpochFromTheSpecAlone() {
        // Fashion-MNIST's size is fixed: 60,000 training images, 10% held out = 54,000.
        spec::DataSpec d;
        d.source.kind = "fashion-mnist";
        d.batch_size = 64;
        d.validation_fraction = 0.1;
        QCOMPARE(*train::known_training_examples(d), int64_t(54000));
        QCOMPARE(*train::known_steps_per_epoch(d, 1), int64_t(844)); // 843 full + 1 partial
        QCOMPARE(*train::known_steps_per_epoch(d, 4), int64_t(211));
        d.drop_last = true;
        QCOMPARE(*train::known_steps_per_epoch(d, 1), int64_t(843));
        // Data-parallel: each process steps through its share, as DistributedSampler deals it
        // (54,000 / 7 = 7,714.3: padded to 7,715 each, or cut to 7,714 with drop_last).
        d.drop_last = false;
        QCOMPARE(*train::known_steps_per_epoch(d, 1, 2), int64_t(422)); // 27,000 / 64 = 421.9
        QCOMPARE(*train::known_steps_per_epoch(d, 1, 7), int64_t(121)); // 7,715 / 64 = 120.5
        for (bool drop : {false, true})
            for (int world : {2, 3, 7}) {
                d.drop_last = drop;
                auto sampler = std::make_shared<data::DistributedSampler>(
                    std::make_shared<data::SequentialSampler>(54000), world, world - 1, drop);
                const int64_t dealt = data::BatchSampler(sampler, 64, drop).size();
                QCOMPARE(*train::known_steps_per_epoch(d, 1, world), dealt);
                QCOMPARE(*train::known_steps_per_epoch(d, 2, world), (dealt + 1) / 2);
            }
        QVERIFY(!train::known_steps_per_epoch(d, 1, 0));
        d.drop_last = true;
        d.validation_fraction = 0;
        QCOMPARE(*train::known_training_examples(d), int64_t(60000));
        // Sized by their files: not known without reading them.
        d.source.kind = "csv";
        QVERIFY(!train::known_training_examples(d));
        QVERIFY(!train::known_steps_per_epoch(d, 1));
    }

    // --- metrics ---------------------------------------------------------------------------------

    void runInfoRecordsTheThreadsTheTrainerUses() {
        // CLI and studio both record a new run through run_info: the thread count is the one
        // the Trainer will set (options, else project, else the process default).
        io::Project project;
        project.name = "p";
        train::TrainerOptions options;
        options.run_name = "run a";
        QCOMPARE(train::run_info(project, options).threads, get_num_threads());
        project.train.threads = 3;
        QCOMPARE(train::run_info(project, options).threads, 3);
        options.threads = 2;
        const store::RunInfo info = train::run_info(project, options);
        QCOMPARE(info.threads, 2);
        QCOMPARE(info.name, std::string("run a"));
        QCOMPARE(info.device, std::string("cpu"));
        QCOMPARE(info.project_json, io::serialize_project(project));
    }

    void classificationHandComputed() {
        // true:      0  0  1  1  2  2
        // predicted: 0  1  1  1  0  2
        const std::vector<int64_t> truth{0, 0, 1, 1, 2, 2}, predicted{0, 1, 1, 1, 0, 2};
        ClassificationMetrics m(3, {"cat", "dog", "bird"});
        m.update(logits_predicting(predicted, 3), labels(truth));
        QCOMPARE(m.count(), int64_t(6));
        QCOMPARE(m.correct(), int64_t(4));
        QVERIFY(close_to(m.accuracy(), 4.0 / 6.0));
        const ConfusionMatrix& cm = m.confusion_matrix();
        QCOMPARE(cm.num_classes, int64_t(3));
        QCOMPARE(cm.counts, std::vector<int64_t>({1, 1, 0, 0, 2, 0, 1, 0, 1}));
        QCOMPARE(cm.at(2, 0), int64_t(1));
        QCOMPARE(cm.class_names, std::vector<std::string>({"cat", "dog", "bird"}));

        // precision = tp / column sum, recall = tp / row sum
        const std::vector<ClassScores> s = m.per_class();
        QVERIFY(close_to(s[0].precision, 0.5) && close_to(s[0].recall, 0.5));
        QVERIFY(close_to(s[1].precision, 2.0 / 3.0) && close_to(s[1].recall, 1.0));
        QVERIFY(close_to(s[2].precision, 1.0) && close_to(s[2].recall, 0.5));
        QVERIFY(close_to(s[0].f1, 0.5));
        QVERIFY(close_to(s[1].f1, 0.8));
        QVERIFY(close_to(s[2].f1, 2.0 / 3.0));
        QCOMPARE(s[1].support, int64_t(2));
        QVERIFY(close_to(m.macro_f1(), (0.5 + 0.8 + 2.0 / 3.0) / 3.0));
        QVERIFY(close_to(m.macro_precision(), (0.5 + 2.0 / 3.0 + 1.0) / 3.0));
        QVERIFY(close_to(m.macro_recall(), 2.0 / 3.0));

        QVERIFY(!m.has_top5());
        QVERIFY(error_of<Error>([&] { m.top5_accuracy(); }).contains("at least 5 classes"));
        const MetricMap scalars = m.scalars();
        QVERIFY(!scalars.count("top5_accuracy"));
        QVERIFY(close_to(scalars.at("accuracy"), 4.0 / 6.0));
        QVERIFY(close_to(scalars.at("macro_f1"), m.macro_f1()));

        // Streaming: the same samples in two batches give the same totals.
        ClassificationMetrics split(3);
        const Tensor all = logits_predicting(predicted, 3);
        split.update(all.narrow(0, 0, 4), labels({0, 0, 1, 1}));
        split.update(all.narrow(0, 4, 2), labels({2, 2}));
        QCOMPARE(split.confusion_matrix().counts, cm.counts);
        QCOMPARE(split.correct(), m.correct());

        m.reset();
        QCOMPARE(m.count(), int64_t(0));
        QCOMPARE(m.accuracy(), 0.0);
        QCOMPARE(m.confusion_matrix().counts, std::vector<int64_t>(9, 0));
    }

    void classificationUndefinedScoresAreZero() {
        // Class 3 never occurs and is never predicted; class 2 is predicted but never true.
        ClassificationMetrics m(4);
        m.update(logits_predicting({0, 2}, 4), labels({0, 1}));
        const ClassScores never = m.class_scores(3);
        QCOMPARE(never.precision, 0.0);
        QCOMPARE(never.recall, 0.0);
        QCOMPARE(never.f1, 0.0);
        QCOMPARE(never.support, int64_t(0));
        QCOMPARE(m.class_scores(2).precision, 0.0); // predicted once, wrongly
        QCOMPARE(m.class_scores(1).recall, 0.0);
        QVERIFY(error_of<IndexError>([&] { m.class_scores(4); }).contains("class 4"));
        QCOMPARE(ClassificationMetrics(3).scalars().at("accuracy"), 0.0); // nothing seen yet
    }

    void classificationTop5() {
        // Row i ranks class j at position j (values 7 - j); targets at ranks 0, 3, 4, 5, 6.
        const int64_t classes = 7;
        std::vector<float> v;
        for (int i = 0; i < 5; ++i)
            for (int64_t j = 0; j < classes; ++j)
                v.push_back(float(classes - j));
        ClassificationMetrics m(classes);
        QVERIFY(m.has_top5());
        m.update(from_vector(v, {5, classes}), labels({0, 3, 4, 5, 6}));
        QCOMPARE(m.correct(), int64_t(1));
        QCOMPARE(m.top5_correct(), int64_t(3));
        QVERIFY(close_to(m.top5_accuracy(), 0.6));
        QVERIFY(close_to(m.scalars().at("top5_accuracy"), 0.6));

        // Ties: the lower index ranks first, as argmax picks the first maximum.
        ClassificationMetrics ties(classes);
        ties.update(zeros({3, classes}), labels({0, 4, 5}));
        QCOMPARE(ties.correct(), int64_t(1));
        QCOMPARE(ties.top5_correct(), int64_t(2));
        QCOMPARE(ties.confusion_matrix().at(5, 0), int64_t(1));

        // NaN ranks above every number (torch.argmax).
        ClassificationMetrics nan(3);
        nan.update(tensor({{1.0, kNaN, 5.0}}), labels({1}));
        QCOMPARE(nan.correct(), int64_t(1));

        // Exactly five classes: defined, trivially 1.
        ClassificationMetrics five(5);
        QVERIFY(five.has_top5());
        five.update(logits_predicting({0, 1, 2}, 5), labels({4, 3, 2}));
        QCOMPARE(five.top5_accuracy(), 1.0);
        QVERIFY(!ClassificationMetrics(4).has_top5());
    }

    void classificationMatchesReference() {
        const int64_t n = 10000, classes = 10;
        Tensor logits = randn({n, classes});
        Tensor targets = randint(0, classes, {n});
        ClassificationMetrics m(classes);
        m.update(logits, targets);
        const auto ref = reference_classification(logits.to_vector<float>(),
                                                  targets.to_vector<int64_t>(), classes);
        QCOMPARE(m.confusion_matrix().counts, ref.confusion);
        QCOMPARE(m.correct(), ref.correct);
        QCOMPARE(m.top5_correct(), ref.top5);
        QCOMPARE(m.accuracy(), mean(eq(argmax(logits, 1), targets).to(DType::Float64)).item());

        // Other dtypes and layouts give what the same values give as contiguous float32.
        const Tensor small = randn({50, 6});
        const Tensor small_targets = randint(0, 6, {50});
        auto counts_of = [&](const Tensor& l, const Tensor& t) {
            ClassificationMetrics c(6);
            c.update(l, t);
            return c.confusion_matrix().counts;
        };
        const auto expected = counts_of(small, small_targets);
        QCOMPARE(counts_of(small.to(DType::Float64), small_targets), expected);
        QCOMPARE(counts_of(small.t().contiguous().t(), small_targets), expected); // strided
        QCOMPARE(counts_of(small, small_targets.to(DType::UInt8)), expected);
        const Tensor bf16 = small.to(DType::BFloat16);
        QCOMPARE(counts_of(bf16, small_targets), counts_of(bf16.to(DType::Float32), small_targets));
        Tensor needs_grad = small.clone().requires_grad_();
        QCOMPARE(counts_of(needs_grad, small_targets), expected);
    }

    void classificationErrors() {
        ClassificationMetrics m(3);
        m.update(logits_predicting({0}, 3), labels({0}));
        QString e = error_of<Error>([&] {
            m.update(logits_predicting({0, 1}, 3), labels({1, 3}));
        });
        QVERIFY2(e.contains("class label 3") && e.contains("3 classes") && e.contains("target 1"),
                 qPrintable(e));
        e = error_of<Error>([&] { m.update(logits_predicting({0}, 3), labels({-1})); });
        QVERIFY2(e.contains("class label -1"), qPrintable(e));
        QCOMPARE(m.count(), int64_t(1)); // rejected batches leave the totals alone
        QCOMPARE(m.correct(), int64_t(1));

        e = error_of<ShapeError>([&] { m.update(zeros({4, 2}), labels({0, 0, 0, 0})); });
        QVERIFY2(e.contains("[N, 3]") && e.contains("[4, 2]"), qPrintable(e));
        e = error_of<ShapeError>([&] { m.update(zeros({4, 3}), labels({0, 0})); });
        QVERIFY2(e.contains("[4]") && e.contains("[2]"), qPrintable(e));
        e = error_of<DTypeError>([&] { m.update(zeros({1, 3}), zeros({1})); });
        QVERIFY2(e.contains("int64") && e.contains("float32"), qPrintable(e));
        QVERIFY(error_of<DTypeError>([&] {
                    m.update(zeros({1, 3}, DType::Int64), labels({0}));
                }).contains("floating point"));
        QVERIFY(error_of<Error>([] { ClassificationMetrics(0); }).contains("at least 1"));
        QVERIFY(error_of<Error>([] { ClassificationMetrics(3, {"a"}); }).contains("1 class names"));
        m.update(zeros({0, 3}), zeros({0}, DType::Int64)); // an empty batch is fine
        QCOMPARE(m.count(), int64_t(1));
    }

    void regressionHandComputed() {
        // errors 0, -1, 1, -2; target mean 3, SS_tot = 4 + 0 + 1 + 9 = 14, SS_res = 6
        RegressionMetrics m;
        m.update(tensor({1, 2, 3, 4}), tensor({1, 3, 2, 6}));
        QCOMPARE(m.count(), int64_t(4));
        QVERIFY(close_to(m.mae(), 1.0));
        QVERIFY(close_to(m.mse(), 1.5));
        QVERIFY(close_to(m.rmse(), std::sqrt(1.5)));
        QVERIFY(close_to(m.r2(), 1.0 - 6.0 / 14.0));

        RegressionMetrics streamed; // three batches, one of them [N, 1] against [N]
        streamed.update(tensor({1}), tensor({1}));
        streamed.update(tensor({2, 3}).view({2, 1}), tensor({3, 2}));
        streamed.update(tensor({4}, DType::Float64), tensor({6}, DType::Float64));
        QCOMPARE(streamed.count(), int64_t(4));
        QVERIFY(close_to(streamed.r2(), m.r2()));
        QVERIFY(close_to(streamed.mse(), m.mse()));
        QVERIFY(close_to(streamed.mae(), m.mae()));
        const MetricMap s = m.scalars();
        QVERIFY(close_to(s.at("rmse"), std::sqrt(1.5)) && close_to(s.at("r2"), m.r2()));

        RegressionMetrics perfect;
        const Tensor y = randn({100, 3});
        perfect.update(y, y.clone());
        QCOMPARE(perfect.r2(), 1.0);
        QCOMPARE(perfect.mse(), 0.0);

        RegressionMetrics constant; // SS_tot = 0: 1 when perfect, else 0
        constant.update(tensor({2, 2}), tensor({2, 2}));
        QCOMPARE(constant.r2(), 1.0);
        constant.update(tensor({3}), tensor({2}));
        QCOMPARE(constant.r2(), 0.0);

        m.reset();
        QCOMPARE(m.count(), int64_t(0));
        QCOMPARE(m.r2(), 0.0);
        QVERIFY(error_of<ShapeError>([&] {
                    m.update(zeros({4, 2}), zeros({4}));
                }).contains("[4, 2]"));
    }

    void regressionLargeOffsetTargets() {
        // Targets around 1e7 with spread ~1: sum-of-squares formulas lose every digit here.
        std::vector<double> target = random_values(5000, 7), pred(5000);
        for (size_t i = 0; i < target.size(); ++i) {
            target[i] += 1e7;
            pred[i] = target[i] + 0.25 * std::sin(double(i));
        }
        RegressionMetrics m;
        for (int64_t begin = 0; begin < 5000; begin += 999) {
            const int64_t len = std::min<int64_t>(999, 5000 - begin);
            m.update(from_vector(pred, {5000}).narrow(0, begin, len),
                     from_vector(target, {5000}).narrow(0, begin, len));
        }
        double mean_t = 0, ss_res = 0, ss_tot = 0;
        for (double t : target)
            mean_t += t / 5000.0;
        for (size_t i = 0; i < target.size(); ++i) {
            ss_res += (pred[i] - target[i]) * (pred[i] - target[i]);
            ss_tot += (target[i] - mean_t) * (target[i] - mean_t);
        }
        QVERIFY2(close_to(m.r2(), 1.0 - ss_res / ss_tot, 1e-9),
                 qPrintable(QString::number(m.r2(), 'g', 17)));
        QVERIFY(close_to(m.mse(), ss_res / 5000.0, 1e-9));
    }

    void runningMean() {
        RunningMean loss;
        QCOMPARE(loss.mean(), 0.0);
        loss.add(2.0, 3); // three samples averaging 2
        loss.add(4.0, 1);
        loss.add(kNaN, 0); // an empty batch adds nothing
        QCOMPARE(loss.mean(), 2.5);
        QCOMPARE(loss.total_weight(), int64_t(4));
        QVERIFY(error_of<Error>([&] { loss.add(1.0, -1); }).contains("-1"));
        loss.reset();
        QCOMPARE(loss.total_weight(), int64_t(0));
    }

    // --- capture ---------------------------------------------------------------------------------

    void summaryMatchesBruteForce() {
        for (size_t n : {size_t(1000), size_t(300001)}) { // one chunk; several, in parallel
            std::vector<double> v = random_values(n, uint32_t(n));
            for (size_t i = 0; i < n; i += 7)
                v[i] = 0.0;
            v[3] = kNaN;
            v[n / 2] = kInf;
            v[n - 2] = -kInf;
            v[n - 1] = kNaN;
            for (int bins : {64, 7, 1}) {
                const Tensor f64 = from_vector(v, {int64_t(n)});
                expect_summary(summarize(f64, bins), v, bins);
                const Tensor f32 = f64.to(DType::Float32);
                expect_summary(summarize(f32, bins), as_doubles(f32), bins);
            }
            const Tensor bf16 = from_vector(v, {int64_t(n)}).to(DType::BFloat16);
            expect_summary(summarize(bf16), as_doubles(bf16), 64);
        }
        // Strided and integer inputs.
        const Tensor m = randn({300, 500});
        expect_summary(summarize(m.t()), as_doubles(m.t()), 64, 1e-11);
        const Tensor ints = randint(-1000, 1000, {70000});
        expect_summary(summarize(ints), as_doubles(ints), 64);
        Tensor relu_like = relu(randn({100000})).requires_grad_();
        const TensorSummary s = summarize(relu_like);
        QVERIFY(s.zero_fraction() > 0.4 && s.zero_fraction() < 0.6);
        QCOMPARE(s.zero_fraction(), double(s.zero_count) / 100000.0);
    }

    void summaryDoesNotDependOnThreadCount() {
        const Tensor x = randn({1000003});
        const int threads = get_num_threads();
        set_num_threads(1);
        const TensorSummary one = summarize(x);
        const double norm_one = l2_norm(x);
        set_num_threads(3);
        const TensorSummary three = summarize(x);
        const double norm_three = l2_norm(x);
        set_num_threads(threads);
        QVERIFY(one.mean == three.mean); // bit-identical, not just close
        QVERIFY(one.std == three.std);
        QCOMPARE(one.histogram, three.histogram);
        QVERIFY(norm_one == norm_three);
    }

    void summaryEdgeBins() {
        // 0..64 in 64 bins of width 1: each value opens its bin, 64 closes the last one.
        const TensorSummary s = summarize(arange(65).to(DType::Float32), 64);
        std::vector<int64_t> expected(64, 1);
        expected.back() = 2;
        QCOMPARE(s.histogram, expected);
        QCOMPARE(s.hist_low, 0.0);
        QCOMPARE(s.hist_high, 64.0);

        // A value exactly on an edge where (v - low) * bins / range rounds down below the edge's
        // index: it still belongs to the bin the edge opens.
        const double low = 3.9166573353688694, high = 9.244002213953603, edge1 = 4.677706603738117;
        QCOMPARE(low + (high - low) / 7, edge1);
        QCOMPARE(summarize(tensor({low, edge1, high}, DType::Float64), 7).histogram,
                 std::vector<int64_t>({1, 1, 0, 0, 0, 0, 1}));
        // Just below an edge where the same formula rounds up onto it: the bin before.
        const double low2 = -8.168304251898528, high2 = -0.9465158297003669;
        const double below_edge6 = -1.9781998900143904;
        QVERIFY(below_edge6 < low2 + 6 * ((high2 - low2) / 7));
        QCOMPARE(summarize(tensor({low2, below_edge6, high2}, DType::Float64), 7).histogram,
                 std::vector<int64_t>({1, 0, 0, 0, 0, 1, 1}));
    }

    void summaryDegenerateTensors() {
        const TensorSummary c = summarize(full({100}, 3.5));
        QCOMPARE(c.mean, 3.5);
        QCOMPARE(c.std, 0.0);
        QCOMPARE(c.min, 3.5);
        QCOMPARE(c.max, 3.5);
        QCOMPARE(c.hist_low, 3.0); // numpy widens an empty range by 0.5 each side
        QCOMPARE(c.hist_high, 4.0);
        QCOMPARE(c.histogram[32], int64_t(100));
        QCOMPARE(summarize(full({5}, -2.0), 1).histogram, std::vector<int64_t>({5}));

        const TensorSummary one = summarize(tensor({7}));
        QCOMPARE(one.std, 0.0); // fewer than 2 values: 0, not NaN
        QCOMPARE(one.mean, 7.0);

        const TensorSummary empty = summarize(zeros({0, 4}));
        QCOMPARE(empty.numel, int64_t(0));
        QCOMPARE(empty.histogram, std::vector<int64_t>(64, 0));
        QCOMPARE(empty.zero_fraction(), 0.0);

        const TensorSummary bad = summarize(tensor({kNaN, kInf, -kInf, kNaN}));
        QCOMPARE(bad.finite_count, int64_t(0));
        QCOMPARE(bad.nan_count, int64_t(2));
        QCOMPARE(bad.inf_count, int64_t(2));
        QCOMPARE(bad.mean, 0.0);
        QCOMPARE(bad.hist_low, 0.0);
        QCOMPARE(bad.hist_high, 1.0);
        QCOMPARE(bad.histogram, std::vector<int64_t>(64, 0));

        QVERIFY(error_of<Error>([] { summarize(tensor({1}), 0); }).contains("at least 1 bin"));
        QVERIFY(error_of<Error>([] { summarize(Tensor()); }).contains("undefined"));
    }

    void norms() {
        for (int64_t n : {int64_t(1000), int64_t(300001)}) {
            const std::vector<double> v = random_values(size_t(n), 3);
            const Tensor f32 = from_vector(v, {n}).to(DType::Float32);
            double expected = 0;
            for (double x : as_doubles(f32))
                expected += x * x;
            QVERIFY(close_to(sum_of_squares(f32), expected));
            QVERIFY(close_to(l2_norm(f32), std::sqrt(expected)));
            QVERIFY(close_to(l2_norm(f32), norm(f32.to(DType::Float64)).item(), 1e-10));
            double expected64 = 0;
            for (double x : v)
                expected64 += x * x;
            QVERIFY(close_to(sum_of_squares(from_vector(v, {n})), expected64));
        }
        const Tensor m = randn({40, 30});
        QVERIFY(close_to(l2_norm(m.t()), l2_norm(m)));
        QVERIFY(close_to(l2_norm(m.to(DType::BFloat16)),
                         l2_norm(m.to(DType::BFloat16).to(DType::Float32))));
        QVERIFY(std::isinf(l2_norm(tensor({1, kInf}))));
        QVERIFY(std::isnan(l2_norm(tensor({1, kNaN}))));
        QCOMPARE(l2_norm(zeros({0})), 0.0);
        Tensor w = randn({10}).requires_grad_();
        QVERIFY(l2_norm(w) > 0.0);
    }

    // Σx², Σ|x|, max |x| and the count in one pass, against a plain loop (one chunk and many,
    // float32 and float64, a transposed view, NaN).
    void magnitudes() {
        for (int64_t n : {int64_t(1000), int64_t(300001)}) {
            const std::vector<double> v = random_values(size_t(n), 5);
            for (DType dtype : {DType::Float32, DType::Float64}) {
                const Tensor x = from_vector(v, {n}).to(dtype);
                double squares = 0, abs_sum = 0, top = 0;
                for (double e : as_doubles(x)) {
                    squares += e * e;
                    abs_sum += std::fabs(e);
                    top = std::max(top, std::fabs(e));
                }
                const MagnitudeStats s = magnitude_stats(x);
                QCOMPARE(s.count, n);
                QVERIFY(close_to(s.sum_squares, squares));
                QVERIFY(close_to(s.sum_abs, abs_sum));
                QCOMPARE(s.max_abs, top); // a maximum is exact
                QVERIFY(close_to(s.mean_abs(), abs_sum / double(n)));
                QVERIFY(close_to(s.sum_squares, sum_of_squares(x)));
            }
        }
        const Tensor m = randn({40, 30});
        QCOMPARE(magnitude_stats(m.t()).max_abs, magnitude_stats(m).max_abs);
        MagnitudeStats both = magnitude_stats(tensor({1, -3}));
        both += magnitude_stats(tensor({2}));
        QCOMPARE(both.max_abs, 3.0);
        QCOMPARE(both.count, int64_t(3));
        QCOMPARE(both.mean_abs(), 2.0);
        QVERIFY(std::isnan(magnitude_stats(tensor({1, kNaN})).sum_abs));
        QCOMPARE(magnitude_stats(zeros({0})).mean_abs(), 0.0);
    }

    void updateRatio() {
        const Tensor before = randn({300001});
        const Tensor after = before + 0.01 * randn({300001});
        const std::vector<double> b = as_doubles(before), a = as_doubles(after);
        double update = 0, weight = 0;
        for (size_t i = 0; i < b.size(); ++i) {
            update += (a[i] - b[i]) * (a[i] - b[i]);
            weight += b[i] * b[i];
        }
        const UpdateSquares u = update_squares(before, after);
        QVERIFY(close_to(u.update, update));
        QVERIFY(close_to(u.weight, weight));
        QVERIFY(close_to(u.ratio(), std::sqrt(update / weight)));
        QVERIFY(close_to(update_ratio(before, after), std::sqrt(update / weight)));

        // A layer's parameters add up as sums of squares.
        UpdateSquares layer = update_squares(tensor({3, 0}), tensor({3, 1}));
        layer += update_squares(tensor({4}), tensor({6}));
        QCOMPARE(layer.update, 5.0);
        QCOMPARE(layer.weight, 25.0);
        QCOMPARE(layer.ratio(), 1.0 / std::sqrt(5.0));
        QCOMPARE(update_squares(zeros({3}), ones({3})).ratio(), 0.0); // zero weights: 0

        QVERIFY(close_to(update_squares(before.to(DType::Float64), after).update, update));
        QVERIFY(
            error_of<ShapeError>([] { update_squares(zeros({3}), zeros({4})); }).contains("[3]"));
    }

    void snapshotIsADetachedCopy() {
        Tensor x = randn({3, 4}).requires_grad_();
        const Tensor y = x * 2.0;
        const Tensor s = snapshot(y);
        QVERIFY(!s.requires_grad());
        QVERIFY(!s.shares_storage(y));
        QVERIFY(equal(s, y.detach()));
        Tensor plain = randn({4, 3});
        const Tensor t = snapshot(plain.t());
        QVERIFY(t.is_contiguous());
        QVERIFY(equal(t, plain.t()));
        plain.fill_(0.0);
        QVERIFY(!equal(t, plain.t())); // the copy kept the old values
    }

    // --- events ----------------------------------------------------------------------------------

    void eventKinds() {
        std::vector<Event> all{
            Event(RunStarted{}),         Event(StepMetrics{}),     Event(EpochMetrics{}),
            Event(TensorSummaryEvent{}), Event(FeatureMapEvent{}), Event(CheckpointSaved{}),
            Event(Progress{}),           Event(LogMessage{}),      Event(RunError{}),
            Event(BreakpointFired{}),    Event(Finished{})};
        const std::vector<EventKind> kinds{
            EventKind::RunStarted,    EventKind::StepMetrics, EventKind::EpochMetrics,
            EventKind::TensorSummary, EventKind::FeatureMap,  EventKind::CheckpointSaved,
            EventKind::Progress,      EventKind::Log,         EventKind::Error,
            EventKind::Breakpoint,    EventKind::Finished};
        for (size_t i = 0; i < all.size(); ++i) {
            QCOMPARE(all[i].kind(), kinds[i]);
            QVERIFY(all[i].wall_time > 1.6e9); // stamped with the wall clock (after 2020)
        }
        QCOMPARE(std::string(event_kind_name(EventKind::CheckpointSaved)), "CheckpointSaved");
        std::vector<bool> droppable;
        for (const Event& e : all)
            droppable.push_back(e.droppable());
        QCOMPARE(droppable, std::vector<bool>({false, true, false, true, true, false, true, false,
                                               false, false, false}));

        RunError error{"loss is NaN", 1, 40, "conv2"};
        Event e(error, 123.0);
        QCOMPARE(e.wall_time, 123.0);
        QVERIFY(e.get<StepMetrics>() == nullptr);
        QCOMPARE(*e.get<RunError>()->module, std::string("conv2"));
        QCOMPARE(std::string(run_status_name(RunStatus::Stopped)), "stopped");
        QCOMPARE(std::string(summary_kind_name(SummaryKind::Gradient)), "gradient");

        FeatureMapEvent fm;
        fm.values = snapshot(randn({2, 8, 8}));
        const Event a(fm);
        const Event copy = a; // copies share the snapshot: cheap
        QVERIFY(copy.get<FeatureMapEvent>()->values.is_same(a.get<FeatureMapEvent>()->values));
    }

    void queueDropsOldestDroppable() {
        auto numbers = [](const std::vector<Event>& events) {
            std::vector<int64_t> out;
            for (const Event& e : events)
                out.push_back(number_of(e));
            return out;
        };
        EventQueue q(3);
        q.push(step_event(1));
        q.push(step_event(2));
        q.push(step_event(3));
        q.push(step_event(4));   // full: step 1 goes
        q.push(epoch_event(10)); // step 2 goes
        QCOMPARE(q.dropped(), uint64_t(2));
        std::vector<Event> out;
        q.drain(out);
        QCOMPARE(numbers(out), std::vector<int64_t>({3, 4, 10}));

        q.push(step_event(5));
        q.push(epoch_event(11));
        q.push(step_event(6));
        q.push(epoch_event(12)); // step 5 goes
        q.push(epoch_event(13)); // step 6 goes
        QCOMPARE(q.dropped(), uint64_t(4));
        QCOMPARE(q.size(), size_t(3));
        q.push(epoch_event(14)); // never dropped: past capacity
        QCOMPARE(q.size(), size_t(4));
        q.push(step_event(7)); // nothing droppable queued: the newcomer goes
        QCOMPARE(q.dropped(), uint64_t(5));
        QCOMPARE(q.pushed(), uint64_t(12));

        out.clear();
        QCOMPARE(q.drain(out, 2), size_t(2));
        QCOMPARE(q.drain(out, 0), size_t(0));
        QCOMPARE(q.drain(out), size_t(2));
        QCOMPARE(q.drain(out), size_t(0));
        QCOMPARE(numbers(out), std::vector<int64_t>({11, 12, 13, 14}));
        QCOMPARE(uint64_t(out.size() + 3) + q.dropped(), q.pushed());
    }

    void queueKeepsPushOrderAcrossKinds() {
        EventQueue q(100);
        std::vector<int64_t> pushed;
        for (int64_t i = 0; i < 40; ++i) {
            q.push(i % 3 == 0 ? epoch_event(i) : step_event(i));
            pushed.push_back(i);
        }
        q.push(Event(LogMessage{LogLevel::Warning, "lr reduced"}));
        std::vector<Event> out;
        QCOMPARE(q.drain(out, 17), size_t(17)); // a limit that splits the kinds
        q.drain(out);
        QCOMPARE(out.size(), size_t(41));
        for (int64_t i = 0; i < 40; ++i)
            QCOMPARE(number_of(out[size_t(i)]), i);
        QCOMPARE(out.back().get<LogMessage>()->text, std::string("lr reduced"));
        QCOMPARE(q.dropped(), uint64_t(0));
        QVERIFY(error_of<Error>([] { EventQueue(0); }).contains("at least 1"));
    }

    void queueClose() {
        EventQueue q(4);
        q.push(step_event(1));
        q.push(Event(Finished{RunStatus::Finished, 2, 100}));
        QVERIFY(!q.closed());
        q.close();
        QVERIFY(q.closed());
        QVERIFY(!q.exhausted()); // queued events survive close
        q.push(step_event(2));   // discarded
        QCOMPARE(q.dropped(), uint64_t(1));
        std::vector<Event> out;
        QCOMPARE(q.wait_and_drain(out, std::chrono::minutes(10)), size_t(2));
        QCOMPARE(out.back().kind(), EventKind::Finished);
        QVERIFY(q.exhausted());
        // Closed and empty: returns without waiting for the (long) timeout.
        QCOMPARE(q.wait_and_drain(out, std::chrono::minutes(10)), size_t(0));

        // close() wakes a consumer that is waiting.
        EventQueue waiting(4);
        std::atomic<bool> woke{false};
        std::thread consumer([&] {
            std::vector<Event> got;
            waiting.wait_and_drain(got, std::chrono::minutes(10));
            woke = true;
        });
        waiting.close();
        consumer.join();
        QVERIFY(woke);
    }

    void queueWaitWakesOnPush() {
        EventQueue q(8);
        std::vector<Event> got;
        std::thread consumer([&] {
            while (got.empty())
                q.wait_and_drain(got, std::chrono::minutes(10));
        });
        q.push(epoch_event(5));
        consumer.join();
        QCOMPARE(got.size(), size_t(1));
        QCOMPARE(number_of(got[0]), int64_t(5));
    }

    void queueProducerConsumer() {
        // One producer, 100k events, every 50th not droppable; a consumer slower than it.
        const int64_t total = 100000;
        EventQueue q(64);
        std::vector<Event> received;
        std::thread consumer([&] {
            std::vector<Event> batch;
            while (!q.exhausted()) {
                batch.clear();
                q.wait_and_drain(batch, std::chrono::milliseconds(50), 100);
                for (Event& e : batch)
                    received.push_back(std::move(e));
                std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
        });
        std::thread producer([&] {
            for (int64_t i = 0; i < total; ++i)
                q.push(i % 50 == 0 ? epoch_event(i) : step_event(i));
            q.close();
        });
        producer.join();
        consumer.join();

        QCOMPARE(q.pushed(), uint64_t(total));
        QCOMPARE(uint64_t(received.size()) + q.dropped(), uint64_t(total));
        std::vector<int64_t> kept;
        int64_t previous = -1;
        for (const Event& e : received) {
            const int64_t i = number_of(e);
            QVERIFY2(i > previous, "events arrive in push order");
            previous = i;
            if (!e.droppable()) kept.push_back(i);
        }
        QCOMPARE(kept.size(), size_t(total / 50)); // every non-droppable event, in order
        for (size_t k = 0; k < kept.size(); ++k)
            QCOMPARE(kept[k], int64_t(k) * 50);
    }

    void queueManyProducers() {
        const int producers = 4;
        const int64_t each = 25000;
        EventQueue q(32);
        std::vector<Event> received;
        std::thread consumer([&] {
            while (!q.exhausted())
                q.wait_and_drain(received, std::chrono::milliseconds(20));
        });
        std::vector<std::thread> threads;
        for (int p = 0; p < producers; ++p)
            threads.emplace_back([&, p] {
                for (int64_t i = 0; i < each; ++i) {
                    const int64_t id = p * each + i; // producer p's events: [p * each, ...)
                    q.push(i % 100 == 0 ? epoch_event(id) : step_event(id));
                }
            });
        for (std::thread& t : threads)
            t.join();
        q.close();
        consumer.join();

        QCOMPARE(uint64_t(received.size()) + q.dropped(), uint64_t(producers * each));
        std::vector<int64_t> last(producers, -1);
        int64_t kept = 0;
        for (const Event& e : received) {
            const int64_t id = number_of(e);
            const int p = int(id / each);
            QVERIFY2(id > last[size_t(p)], "each producer's events arrive in its order");
            last[size_t(p)] = id;
            kept += !e.droppable();
        }
        QCOMPARE(kept, int64_t(producers * each / 100));
    }

    void fanOut() {
        std::vector<int64_t> first, second;
        FanOut fan;
        CallbackSink a([&](const Event& e) { first.push_back(number_of(e)); });
        fan.add(a);
        fan.add(std::make_shared<CallbackSink>([](const Event& e) {
            if (number_of(e) == 2) throw Error("store is locked");
        }));
        fan.add(std::make_shared<CallbackSink>(
            [&](const Event& e) { second.push_back(number_of(e)); }));
        QCOMPARE(fan.size(), size_t(3));
        fan.on_event(step_event(1));
        QCOMPARE(error_of<Error>([&] { fan.on_event(step_event(2)); }), QString("store is locked"));
        fan.on_event(step_event(3));
        QCOMPARE(first, std::vector<int64_t>({1, 2, 3})); // the failing sink kept no one from it
        QCOMPARE(second, std::vector<int64_t>({1, 2, 3}));
        QVERIFY(error_of<Error>([&] { fan.add(std::shared_ptr<EventSink>()); }).contains("null"));

        EventQueue q(4); // the queue is a sink too
        fan.add(q);
        fan.on_event(epoch_event(9));
        QCOMPARE(q.size(), size_t(1));
    }

    // --- progress --------------------------------------------------------------------------------

    void progressTracker() {
        double now = 100.0;
        ProgressTracker p(100, 0.5, [&] { return now; });
        QCOMPARE(p.eta_seconds(), -1.0);
        QCOMPARE(p.samples_per_second(), 0.0);
        now = 101.0;
        p.step_done(32); // 1 s
        QCOMPARE(p.samples_per_second(), 32.0);
        QCOMPARE(p.seconds_per_step(), 1.0);
        QCOMPARE(p.eta_seconds(), 99.0);
        now = 103.0;
        p.step_done(32); // 2 s: averages 1.5 s, 32 samples
        QCOMPARE(p.seconds_per_step(), 1.5);
        QCOMPARE(p.samples_per_second(), 32.0 / 1.5);
        QCOMPARE(p.eta_seconds(), 98 * 1.5);
        now = 200.0; // paused: not a step
        p.restart_step_timer();
        now = 201.0;
        p.step_done(16); // 1 s, a short batch: averages 1.25 s, 24 samples
        QCOMPARE(p.seconds_per_step(), 1.25);
        QCOMPARE(p.samples_per_second(), 24.0 / 1.25);
        QCOMPARE(p.steps_done(), int64_t(3));
        QCOMPARE(p.elapsed_seconds(), 101.0);

        // Smoothing 0: the plain average since start; 1: the last step alone.
        now = 0.0;
        ProgressTracker average(10, 0.0, [&] { return now; });
        ProgressTracker last(10, 1.0, [&] { return now; });
        for (double t : {1.0, 4.0}) {
            now = t;
            average.step_done(10);
            last.step_done(10);
        }
        QCOMPARE(average.samples_per_second(), 20.0 / 4.0);
        QCOMPARE(last.samples_per_second(), 10.0 / 3.0);
        QCOMPARE(average.eta_seconds(), 8 * 2.0);

        // Resumed at step 8 of 10: two steps left.
        now = 50.0;
        ProgressTracker resumed(10, 0.3, [&] { return now; });
        resumed.start(8);
        QCOMPARE(resumed.eta_seconds(), -1.0);
        now = 52.0;
        resumed.step_done(4);
        QCOMPARE(resumed.eta_seconds(), 2.0);
        now = 54.0;
        resumed.step_done(4);
        QCOMPARE(resumed.eta_seconds(), 0.0); // done
        resumed.set_total_steps(20);
        QCOMPARE(resumed.eta_seconds(), 20.0);

        QVERIFY(error_of<Error>([] { ProgressTracker(10, 1.5); }).contains("smoothing"));
        QVERIFY(error_of<Error>([] { ProgressTracker(-1); }).contains("-1"));
        ProgressTracker real(5); // the steady clock by default
        QVERIFY(real.elapsed_seconds() >= 0.0);
    }

    // --- early stopping --------------------------------------------------------------------------

    void earlyStoppingMin() {
        EarlyStopping es("val_loss", MetricMode::Min, 2, 0.1);
        QVERIFY(!es.has_best());
        QCOMPARE(es.best(), kInf);
        QVERIFY(es.update(1.0));   // first value: best
        QVERIFY(!es.update(0.95)); // better, but not by more than 0.1
        QCOMPARE(es.bad_epochs(), 1);
        QCOMPARE(es.best(), 1.0);
        QVERIFY(es.update(0.85)); // 0.85 < 1.0 - 0.1
        QCOMPARE(es.bad_epochs(), 0);
        QVERIFY(!es.update(0.80));
        QVERIFY(!es.should_stop());
        QVERIFY(es.stop_reason().empty());
        QVERIFY(!es.update(0.9));
        QVERIFY(es.should_stop()); // two bad epochs = patience
        QCOMPARE(es.best(), 0.85);
        const QString reason = QString::fromStdString(es.stop_reason());
        QVERIFY2(reason.contains("val_loss") && reason.contains("2 epochs"), qPrintable(reason));
        QVERIFY(es.update(0.1)); // still tracks the best, but stays stopped
        QVERIFY(es.should_stop());
        es.reset();
        QVERIFY(!es.should_stop());
        QCOMPARE(es.updates(), int64_t(0));
    }

    void earlyStoppingMax() {
        EarlyStopping es("val_accuracy", MetricMode::Max, 1);
        QCOMPARE(es.best(), -kInf);
        QVERIFY(es.update(0.5));
        QVERIFY(es.update(0.6));
        QVERIFY(!es.update(0.6)); // equal is not better (min_delta 0)
        QVERIFY(es.should_stop());

        EarlyStopping delta("val_accuracy", MetricMode::Max, 3, 0.05);
        QVERIFY(delta.update(0.5));
        QVERIFY(!delta.update(0.55)); // by exactly min_delta: not more than it
        QVERIFY(delta.update(0.56));
        QCOMPARE(delta.best(), 0.56);

        EarlyStopping impatient("loss", MetricMode::Min, 0);
        QVERIFY(impatient.update(1.0));
        QVERIFY(!impatient.should_stop());
        QVERIFY(!impatient.update(1.0));
        QVERIFY(impatient.should_stop()); // patience 0: the first bad epoch
    }

    void earlyStoppingNonFiniteAndState() {
        EarlyStopping es("val_loss", MetricMode::Min, 5);
        es.update(1.0);
        QVERIFY(!es.update(kNaN));
        QVERIFY(es.should_stop()); // diverged: stop at once
        QCOMPARE(es.bad_epochs(), 0);
        QVERIFY(QString::fromStdString(es.stop_reason()).contains("not finite"));

        // Save after three values, restore into a fresh one: both continue identically.
        EarlyStopping a("val_loss", MetricMode::Min, 3, 0.01);
        for (double v : {1.0, 0.8, 0.81})
            a.update(v);
        const EarlyStoppingState saved = a.state();
        EarlyStopping b("val_loss", MetricMode::Min, 3, 0.01);
        b.restore(saved);
        QCOMPARE(b.best(), 0.8);
        QCOMPARE(b.bad_epochs(), 1);
        QCOMPARE(b.updates(), int64_t(3));
        for (double v : {0.795, 0.9, 0.7, 0.71, 0.72, 0.73}) {
            QCOMPARE(b.update(v), a.update(v));
            QCOMPARE(b.should_stop(), a.should_stop());
            QCOMPARE(b.bad_epochs(), a.bad_epochs());
        }
        QVERIFY(a.should_stop());
        QVERIFY(error_of<Error>([&] { b.restore({0.0, -1, false, 0, 0.0}); }).contains("invalid"));
    }

    void earlyStoppingArguments() {
        QCOMPARE(parse_metric_mode("min"), MetricMode::Min);
        QCOMPARE(parse_metric_mode("max"), MetricMode::Max);
        QVERIFY(error_of<Error>([] { parse_metric_mode("median"); }).contains("\"median\""));
        QVERIFY(error_of<Error>([] {
                    EarlyStopping("loss", MetricMode::Min, -1);
                }).contains("patience"));
        QVERIFY(error_of<Error>([] {
                    EarlyStopping("loss", MetricMode::Min, 1, -0.1);
                }).contains("min_delta"));
        QVERIFY(error_of<Error>([] {
                    EarlyStopping("loss", MetricMode::Min, 1, kNaN);
                }).contains("min_delta"));
    }
};

QTEST_GUILESS_MAIN(TestTrainParts)
#include "test_train_parts.moc"
