// train::evaluate_examples: the per-example evaluation behind `myelin eval` and the studio's
// Evaluation view. Its metrics are Trainer::evaluate's, its confusion cells hold exactly the
// examples counted there, its probabilities, losses and top-loss list agree with the outputs.
#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/io/project.h>
#include <myelin/nn/functional.h>
#include <myelin/nn/loss.h>
#include <myelin/tensor.h>
#include <myelin/train/evaluation.h>
#include <myelin/train/trainer.h>

#include <QTemporaryDir>
#include <QtTest>

#include "../support/stripes_project.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace myelin;

namespace {

// Stripes trained for one epoch (some test examples still wrong), with its checkpoints.
struct TrainedStripes {
    std::string folder;
    std::string file;
    std::filesystem::path checkpoint;
};

TrainedStripes trainStripes(const QTemporaryDir& dir) {
    TrainedStripes t;
    t.folder = dir.path().toStdString();
    t.file = test::writeStripesProject(t.folder, 1, 0);
    train::TrainerOptions options;
    options.project_dir = t.folder;
    options.checkpoint_dir = t.folder + "/ck";
    options.max_steps = 3; // early: the confusion matrix has errors off its diagonal
    train::Trainer trainer(io::load_project(t.file), options);
    const train::TrainResult result = trainer.run();
    t.checkpoint = result.last_checkpoint;
    return t;
}

} // namespace

class TestEvaluation : public QObject {
    Q_OBJECT

  private slots:
    void classificationEqualsTrainerEvaluate() {
        QTemporaryDir dir;
        const TrainedStripes s = trainStripes(dir);
        QVERIFY(std::filesystem::exists(s.checkpoint));
        const io::Project project = io::load_project(s.file);
        auto trainer = train::trainer_for_checkpoint(project, s.folder, s.checkpoint);
        std::string split;
        const data::DatasetPtr test = train::evaluation_dataset(*trainer, &split);
        QCOMPARE(split, std::string("test"));

        std::vector<std::pair<int64_t, int64_t>> progress;
        train::EvaluationOptions options;
        options.top_losses = 10;
        options.progress = [&](int64_t done, int64_t total) { progress.emplace_back(done, total); };
        const train::Evaluation e = train::evaluate_examples(*trainer, test, options);
        QVERIFY(!e.cancelled);
        QCOMPARE(e.split, std::string("test"));
        QCOMPARE(e.size, int64_t(48));
        QCOMPARE(e.num_classes(), int64_t(3));
        // 48 examples in batches of 16: progress after each.
        QCOMPARE(progress.size(), size_t(3));
        QCOMPARE(progress.back(), (std::pair<int64_t, int64_t>{3, 3}));

        // The metrics and confusion matrix are Trainer::evaluate's, to the bit.
        train::ConfusionMatrix confusion;
        const train::MetricMap expected = trainer->evaluate(test, &confusion);
        QCOMPARE(e.metrics.size(), expected.size());
        for (const auto& [name, value] : expected) {
            QVERIFY2(e.metrics.count(name), name.c_str());
            QCOMPARE(e.metrics.at(name), value);
        }
        QCOMPARE(e.confusion.counts, confusion.counts);
        int64_t offDiagonal = 0;
        for (int64_t t = 0; t < 3; ++t)
            for (int64_t p = 0; p < 3; ++p) {
                // Each cell lists exactly the examples of that true and predicted class.
                QCOMPARE(int64_t(e.cell(t, p).size()), confusion.at(t, p));
                for (int64_t i : e.cell(t, p)) {
                    QCOMPARE(e.targets[size_t(i)], t);
                    QCOMPARE(e.predicted[size_t(i)], p);
                }
                if (t != p) offDiagonal += confusion.at(t, p);
            }
        QVERIFY2(offDiagonal > 0, "an early checkpoint should get some examples wrong");
        for (int64_t c = 0; c < 3; ++c) {
            const train::ClassScores want = train::class_scores(confusion, c);
            QCOMPARE(e.per_class[size_t(c)].f1, want.f1);
            QCOMPARE(e.per_class[size_t(c)].support, want.support);
            const auto row = e.normalized_row(c);
            double sum = 0;
            for (double v : row)
                sum += v;
            QVERIFY(std::abs(sum - 1.0) < 1e-12);
        }

        // Outputs are Trainer::predict's; targets the dataset's; probabilities the softmax.
        Tensor targets;
        const Tensor out = trainer->predict(test, &targets).contiguous().to(DType::Float32);
        QCOMPARE(e.outputs_per_example, int64_t(3));
        QCOMPARE(e.outputs.size(), size_t(out.numel()));
        const Tensor probs = out.softmax(1).contiguous();
        for (int64_t i = 0; i < e.size; ++i) {
            QCOMPARE(e.targets[size_t(i)], test->label(i));
            float sum = 0;
            int64_t best = 0;
            for (int64_t c = 0; c < 3; ++c) {
                QCOMPARE(e.output(i, c), out.data<float>()[i * 3 + c]);
                QVERIFY(std::abs(e.probability(i, c) - probs.data<float>()[i * 3 + c]) < 1e-6f);
                sum += e.probability(i, c);
                if (e.output(i, c) > e.output(i, best)) best = c;
            }
            QVERIFY(std::abs(sum - 1.0f) < 1e-5f);
            QCOMPARE(e.predicted[size_t(i)], best);
        }

        // Each loss is the example's cross-entropy alone; their mean is the loss metric.
        double sum = 0;
        for (int64_t i = 0; i < e.size; ++i) {
            const Tensor logits = out.narrow(0, i, 1);
            const Tensor target = targets.narrow(0, i, 1);
            const double alone = nn::functional::cross_entropy(logits, target).item<double>();
            QVERIFY(std::abs(e.losses[size_t(i)] - alone) < 1e-5);
            sum += e.losses[size_t(i)];
        }
        QVERIFY(std::abs(sum / double(e.size) - e.metrics.at("loss")) < 1e-5);
        // Top losses: the 10 largest, largest first.
        QCOMPARE(e.top_losses.size(), size_t(10));
        std::vector<double> sorted = e.losses;
        std::sort(sorted.rbegin(), sorted.rend());
        for (size_t k = 0; k < 10; ++k)
            QCOMPARE(e.losses[size_t(e.top_losses[k])], sorted[k]);
    }

    void regressionKeepsPredictionsAndTargets() {
        const std::string example = MYELIN_SOURCE_DIR "/resources/examples";
        const io::Project project = io::load_project(example + "/tabular_regression.myelin");
        train::TrainerOptions options;
        options.project_dir = example;
        options.epochs = 2;
        train::Trainer trainer(project, options);
        QCOMPARE(trainer.run().status, train::RunStatus::Finished);
        const data::DatasetPtr test = train::evaluation_dataset(trainer);
        const train::Evaluation e = train::evaluate_examples(trainer, test);
        QVERIFY(!e.classification());
        QCOMPARE(e.size, int64_t(200));
        QCOMPARE(e.outputs_per_example, int64_t(1));
        const train::MetricMap expected = trainer.evaluate(test);
        for (const auto& [name, value] : expected)
            QCOMPARE(e.metrics.at(name), value);
        // The residuals give the MAE and MSE; each loss is the squared residual.
        double abs = 0, squared = 0;
        for (int64_t i = 0; i < e.size; ++i) {
            QCOMPARE(double(e.target_value(i, 0)), test->get(i).target.item<double>());
            const double r = double(e.output(i, 0)) - double(e.target_value(i, 0));
            abs += std::abs(r);
            squared += r * r;
            QVERIFY(std::abs(e.losses[size_t(i)] - r * r) <= 1e-4 * std::max(1.0, r * r));
        }
        QVERIFY(std::abs(abs / 200 - e.metrics.at("mae")) <= 1e-4 * e.metrics.at("mae"));
        QVERIFY(std::abs(squared / 200 - e.metrics.at("mse")) <= 1e-4 * e.metrics.at("mse"));
        QVERIFY(e.confusion.counts.empty() && e.probabilities.empty());
    }

    void cancelStopsBetweenBatches() {
        QTemporaryDir dir;
        const TrainedStripes s = trainStripes(dir);
        auto trainer =
            train::trainer_for_checkpoint(io::load_project(s.file), s.folder, s.checkpoint);
        int64_t batches = 0;
        train::EvaluationOptions options;
        options.progress = [&](int64_t done, int64_t) { batches = done; };
        options.cancelled = [&] { return batches >= 1; };
        const train::Evaluation e =
            train::evaluate_examples(*trainer, train::evaluation_dataset(*trainer), options);
        QVERIFY(e.cancelled);
        QCOMPARE(batches, int64_t(1));
        QVERIFY(e.metrics.empty());
        QVERIFY(trainer->model().is_training()); // the model's mode is given back
    }

    // Only the model's tensors are loaded: a project whose optimizer no longer takes the
    // checkpoint's state (a frozen layer leaves the optimizer) evaluates the same model.
    void optimizerStateIsNotNeeded() {
        QTemporaryDir dir;
        const TrainedStripes s = trainStripes(dir);
        const io::Project project = io::load_project(s.file);
        io::Project frozen = project;
        for (auto& node : frozen.model.nodes)
            if (node.kind == "Conv2d") node.frozen = true;
        auto a = train::trainer_for_checkpoint(project, s.folder, s.checkpoint);
        auto b = train::trainer_for_checkpoint(frozen, s.folder, s.checkpoint);
        const auto ea = train::evaluate_examples(*a, train::evaluation_dataset(*a));
        const auto eb = train::evaluate_examples(*b, train::evaluation_dataset(*b));
        QCOMPARE(eb.metrics, ea.metrics);
        QCOMPARE(eb.outputs, ea.outputs);
    }

    // The studio evaluates on pool threads that come and go. oneDNN primitives are cached
    // process-wide; with the library's scratchpad a primitive used the memory of the thread
    // that created it, so a convolution on a second thread after the first had ended crashed.
    void convolutionsRunOnFreshThreads() {
        std::vector<double> sums;
        for (int round = 0; round < 3; ++round) {
            std::thread worker([&] {
                manual_seed(4);
                // 16 channels, 3x3, stride 1: Winograd where the CPU has it, direct elsewhere.
                const Tensor x = randn({4, 16, 10, 10}).requires_grad_();
                const Tensor w = randn({16, 16, 3, 3}).requires_grad_();
                nn::functional::Conv2dOptions options;
                options.padding = {1, 1};
                const Tensor y = nn::functional::conv2d(x, w, Tensor(), options);
                y.sum().backward();
                sums.push_back(y.sum().item<double>() + x.grad().sum().item<double>() +
                               w.grad().sum().item<double>());
            });
            worker.join();
        }
        QCOMPARE(sums.size(), size_t(3));
        QCOMPARE(sums[1], sums[0]);
        QCOMPARE(sums[2], sums[0]);
    }

    void checkpointsThatDoNotFitAreRefusedInWords() {
        QTemporaryDir dir;
        const TrainedStripes s = trainStripes(dir);
        io::Project project = io::load_project(s.file);
        try {
            train::trainer_for_checkpoint(project, s.folder, s.folder + "/ck/none.safetensors");
            QFAIL("a missing checkpoint was accepted");
        } catch (const Error& e) {
            QVERIFY2(std::string(e.what()).find("no such checkpoint file") != std::string::npos,
                     e.what());
        }
        // A model of other sizes (conv 1->4, linear 64->3) does not take the checkpoint.
        for (auto& node : project.model.nodes) {
            if (node.kind == "Conv2d") node.attrs.set("out_channels", int64_t(4));
            if (node.kind == "Linear") node.attrs.set("in_features", int64_t(64));
        }
        try {
            train::trainer_for_checkpoint(project, s.folder, s.checkpoint);
            QFAIL("a checkpoint of another model was accepted");
        } catch (const Error& e) {
            const std::string what = e.what();
            QVERIFY2(what.find("does not fit this model") != std::string::npos, e.what());
            QVERIFY2(what.find("conv.weight") != std::string::npos, e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestEvaluation)
#include "test_evaluation.moc"
