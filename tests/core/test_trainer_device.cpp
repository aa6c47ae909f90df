// The Trainer on a chosen device (TrainerOptions::device): a device it cannot train on is refused
// by the constructor with the reason (no GPU here; on a GPU, a model with layers that still read
// host memory: test_device_training); on a usable one the model, its optimizer state and every
// batch live there, and the run is the CPU's bit for bit, checkpoints included (written from host
// copies). Without a GPU a host-backed test device in the CUDA slot (host_backed_device.h) is
// that device; test_device_training runs the examples on one whose memory the host cannot read.
#include <myelin/cuda.h>
#include <myelin/error.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/project.h>
#include <myelin/tensor.h>
#include <myelin/train/trainer.h>

#include <QTemporaryDir>
#include <QtTest>

#include "../support/device_line.h"
#include "host_backed_device.h"
#include "test_support.h"

#include <fstream>
#include <random>

using namespace myelin;
using namespace myelin::train;

namespace {

constexpr Device kCuda{DeviceType::CUDA, 0};

void write_blobs_csv(const std::string& path) {
    std::mt19937 rng(11);
    std::normal_distribution<double> noise(0.0, 0.6);
    std::ofstream out(path);
    out << "x0,x1,x2,x3,label\n";
    const double centers[3][4] = {{2, 0, 0, 1}, {0, 2, 0, -1}, {0, 0, 2, 0}};
    for (int i = 0; i < 240; ++i) {
        const int c = i % 3;
        for (int d = 0; d < 4; ++d)
            out << centers[c][d] + noise(rng) << ",";
        out << "abc"[c] << "\n";
    }
}

// Linear, batch norm (the NN table), ReLU, Linear; Adam (state).
io::Project blobs_project(const std::string& csv) {
    io::Project p;
    p.name = "blobs";
    auto& m = p.model;
    auto in = m.add_node("Input", "", {{"shape", std::vector<int64_t>{4}}});
    auto fc1 =
        m.add_node("Linear", "fc1", {{"in_features", int64_t(4)}, {"out_features", int64_t(16)}});
    auto bn = m.add_node("BatchNorm1d", "bn", {{"num_features", int64_t(16)}});
    auto act = m.add_node("ReLU", "act");
    auto fc2 =
        m.add_node("Linear", "fc2", {{"in_features", int64_t(16)}, {"out_features", int64_t(3)}});
    auto out = m.add_node("Output");
    m.connect(in, fc1);
    m.connect(fc1, bn);
    m.connect(bn, act);
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
    p.train.loss = {"CrossEntropyLoss", {}};
    p.train.optimizer = {"Adam", {{"lr", 0.01}}};
    p.train.epochs = 2;
    p.train.seed = 3;
    p.train.capture.summaries_every = 5;
    p.train.capture.feature_maps_every = 7;
    return p;
}

struct Losses final : EventSink {
    std::vector<double> values;
    void on_event(const Event& e) override {
        if (auto* m = e.get<StepMetrics>()) values.push_back(m->loss);
    }
};

} // namespace

class TestTrainerDevice : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    std::string csv_;
    bool real_cuda_ = false;

  private slots:
    void initTestCase() {
        myelin::test::print_cuda_device();
        QVERIFY(dir_.isValid());
        csv_ = dir_.filePath("blobs.csv").toStdString();
        write_blobs_csv(csv_);
        real_cuda_ = backend::find(DeviceType::CUDA) != nullptr;
    }

    void cudaIsRefusedBeforeAnythingIsBuilt() {
        TrainerOptions o;
        o.device = kCuda;
        o.checkpoint_dir = dir_.filePath("refused").toStdString();
        if (real_cuda_) {
            // Training runs there (the training table): an MLP is accepted.
            Trainer accepted(blobs_project(csv_), o);
            QVERIFY(accepted.model().parameters().front().device() == kCuda);
            return;
        } else {
            CHECK_ERROR(DeviceError, Trainer(blobs_project(csv_), o), "training on cuda:0",
                        cuda_status().reason.c_str());
            CHECK_ERROR(DeviceError, check_training_device(kCuda), "device cuda:0 is not usable",
                        cuda_status().reason.c_str());
        }
        QVERIFY(!QFileInfo::exists(dir_.filePath("refused")));
    }

    void aRunOnTheTestDeviceIsTheCpusRun() {
        if (real_cuda_)
            QSKIP("a real CUDA device holds the slot (test_device_training compares it)");
        test_device::register_if_no_gpu();
        // MLP regression (Linear, ReLU, MSELoss, Adam).
        const std::string path =
            std::string(MYELIN_SOURCE_DIR) + "/resources/examples/tabular_regression.myelin";
        const io::Project regression = io::load_project(path);
        TrainResult results[2];
        Losses losses[2];
        std::vector<std::pair<std::string, Tensor>> weights[2];
        for (int run = 0; run < 2; ++run) {
            TrainerOptions o;
            o.project_dir = std::filesystem::path(path).parent_path();
            o.epochs = 2;
            o.device = run == 0 ? kCPU : kCuda;
            o.checkpoint_dir = dir_.filePath(run == 0 ? "cpu" : "device").toStdString();
            Trainer t(regression, o);
            for (const Tensor& p : t.model().parameters())
                QVERIFY(p.device() == o.device);
            t.set_sink(&losses[run]);
            results[run] = t.run();
            QVERIFY2(results[run].status == RunStatus::Finished, results[run].error.c_str());
            for (const Tensor& b : t.model().buffers())
                QVERIFY(b.device() == o.device);
            for (const auto& [name, v] : t.model().state_dict())
                weights[run].emplace_back(name, v.to(kCPU));
        }
        QVERIFY(!losses[0].values.empty());
        QCOMPARE(losses[1].values, losses[0].values);
        QCOMPARE(results[1].validation, results[0].validation);
        QCOMPARE(results[1].test, results[0].test);
        QCOMPARE(weights[1].size(), weights[0].size());
        for (size_t i = 0; i < weights[0].size(); ++i)
            QVERIFY2(equal(weights[1][i].second, weights[0][i].second),
                     weights[0][i].first.c_str());
        // The checkpoints hold host tensors with the same values.
        const io::Checkpoint a = io::load_checkpoint(results[0].last_checkpoint);
        const io::Checkpoint b = io::load_checkpoint(results[1].last_checkpoint);
        QCOMPARE(b.model.size(), a.model.size());
        for (size_t i = 0; i < a.model.size(); ++i) {
            QVERIFY(b.model[i].second.device() == kCPU);
            QVERIFY(equal(b.model[i].second, a.model[i].second));
        }
        QCOMPARE(b.optimizer.state.size(), a.optimizer.state.size());
        for (const auto& [index, state] : a.optimizer.state)
            for (const auto& [key, t] : state)
                QVERIFY(equal(b.optimizer.state.at(index).at(key), t));
    }
};

QTEST_GUILESS_MAIN(TestTrainerDevice)
#include "test_trainer_device.moc"
