// Feature maps end to end in core: a recorded run with capture.feature_maps_every stores the
// [examples, channels, height, width] outputs of its convolution-like layers (and nothing for
// flatten/linear), on the first 4 validation examples, at every capture step; the stored values
// are the ones the probe reported (to float16 precision), and the probe input is stored once.
#include <myelin/error.h>
#include <myelin/io/project.h>
#include <myelin/store/run_store.h>
#include <myelin/train/layer_inspection.h>
#include <myelin/train/recorded_run.h>
#include <myelin/train/trainer.h>

#include <QTemporaryDir>
#include <QtTest>

#include "../support/stripes_project.h"

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

using namespace myelin;

namespace {

// Float16 keeps 11 significant bits of each value relative to the map's largest |value| scaled
// into [2^14, 2^15): at most half a unit in the last place of the largest, or 2^-11 relative.
bool closeToHalf(float stored, float reported, float largest) {
    return std::abs(stored - reported) <=
           std::max(std::abs(reported) * 0x1p-11f, largest * 0x1p-24f);
}

} // namespace

class TestFeatureMaps : public QObject {
    Q_OBJECT

  private slots:
    void recordedRunStoresConvMapsOnly() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        const std::string file = test::writeStripesProject(folder, 2, 5);
        QVERIFY(!file.empty());
        const io::Project project = io::load_project(file);
        QCOMPARE(project.train.capture.feature_maps_every, int64_t(5));

        // What the probe reported, beside the store.
        std::map<std::pair<std::string, int64_t>, Tensor> reported;
        train::CallbackSink sink([&](const train::Event& e) {
            if (auto* f = e.get<train::FeatureMapEvent>())
                reported[{f->layer, f->step}] = f->values;
        });
        train::TrainerOptions options;
        options.project_dir = folder;
        const std::string storePath = folder + "/runs.sqlite";
        train::RecordedRunOptions where;
        where.store_path = storePath;
        train::RecordedRun run(project, options, where);
        const train::TrainResult result = run.run(&sink);
        QCOMPARE(result.status, train::RunStatus::Finished);
        QCOMPARE(result.steps, int64_t(20)); // 10 batches of up to 16 per epoch, two epochs

        store::RunStore store = store::RunStore::open(storePath);
        // 4-d outputs only, in forward order; flatten and linear outputs are not images.
        QCOMPARE(store.feature_map_layers(run.id()),
                 (std::vector<std::string>{"conv", "act", "pool"}));
        const std::vector<int64_t> steps = {5, 10, 15, 20};
        QCOMPARE(store.feature_map_capture_steps(run.id()), steps);
        const std::map<std::string, std::vector<int64_t>> shapes = {
            {"conv", {4, 8, 8, 8}}, {"act", {4, 8, 8, 8}}, {"pool", {4, 8, 4, 4}}};
        for (const auto& [layer, shape] : shapes) {
            QCOMPARE(store.feature_map_steps(run.id(), layer), steps);
            for (int64_t step : steps) {
                const auto map = store.feature_map(run.id(), layer, step);
                QVERIFY(map);
                QCOMPARE(map->step, step);
                QCOMPARE(
                    (std::vector<int64_t>{map->examples, map->channels, map->height, map->width}),
                    shape);
                const Tensor values = reported.at({layer, step}).contiguous();
                QCOMPARE(size_t(values.numel()), map->values.size());
                float largest = 0;
                for (int64_t i = 0; i < values.numel(); ++i)
                    largest = std::max(largest, std::abs(values.data<float>()[i]));
                QVERIFY(largest > 0);
                for (int64_t i = 0; i < values.numel(); ++i)
                    QVERIFY2(closeToHalf(map->values[size_t(i)], values.data<float>()[i], largest),
                             qPrintable(QStringLiteral("%1 at step %2, value %3: %4 stored, %5 "
                                                       "reported")
                                            .arg(QString::fromStdString(layer))
                                            .arg(step)
                                            .arg(i)
                                            .arg(map->values[size_t(i)])
                                            .arg(values.data<float>()[i])));
            }
        }
        // The maps change as the model trains.
        QVERIFY(store.feature_map(run.id(), "conv", 5)->values !=
                store.feature_map(run.id(), "conv", 20)->values);
        QVERIFY(!store.feature_map(run.id(), "fc", 5));
        QVERIFY(!store.feature_map(run.id(), "flat", 5));

        // The probe input: the first 4 validation examples, stored once.
        const auto input = store.probe_input(run.id());
        QVERIFY(input);
        QCOMPARE(input->step, int64_t(5));
        QCOMPARE(
            (std::vector<int64_t>{input->examples, input->channels, input->height, input->width}),
            (std::vector<int64_t>{4, 1, 8, 8}));
        train::Trainer trainer(project, options);
        const auto& validation = trainer.data().validation;
        std::vector<Tensor> examples;
        float largest = 0; // one scale for the whole batch
        for (int64_t k = 0; k < 4; ++k) {
            examples.push_back(validation->get(k).input.contiguous());
            for (int64_t i = 0; i < 64; ++i)
                largest = std::max(largest, std::abs(examples.back().data<float>()[i]));
        }
        for (int64_t k = 0; k < 4; ++k)
            for (int64_t i = 0; i < 64; ++i)
                QVERIFY(closeToHalf(input->at(k, 0, i / 8, i % 8),
                                    examples[size_t(k)].data<float>()[i], largest));
    }

    void channelStatsCoverOneChannelOfOneExample() {
        store::FeatureMap map;
        map.examples = 2;
        map.channels = 2;
        map.height = 1;
        map.width = 3;
        const float nan = std::numeric_limits<float>::quiet_NaN();
        map.values = {1, 2, 3, /**/ -4, 0, 4, /**/ 5, nan, 7, /**/ nan, nan, nan};
        const auto a = train::channel_stats(map, 0, 1);
        QCOMPARE(a.min, -4.0);
        QCOMPARE(a.max, 4.0);
        QCOMPARE(a.mean, 0.0);
        QCOMPARE(a.nonfinite, int64_t(0));
        const auto b = train::channel_stats(map, 1, 0); // finite values only
        QCOMPARE(b.min, 5.0);
        QCOMPARE(b.max, 7.0);
        QCOMPARE(b.mean, 6.0);
        QCOMPARE(b.nonfinite, int64_t(1));
        const auto c = train::channel_stats(map, 1, 1);
        QVERIFY(std::isnan(c.min) && std::isnan(c.max) && std::isnan(c.mean));
        QCOMPARE(c.nonfinite, int64_t(3));
        QVERIFY_THROWS_EXCEPTION(Error, train::channel_stats(map, 2, 0));
    }

    void captureOffStoresNothing() {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        const std::string file = test::writeStripesProject(folder, 1, 0);
        train::TrainerOptions options;
        options.project_dir = folder;
        train::RecordedRunOptions where;
        where.store_path = folder + "/runs.sqlite";
        train::RecordedRun run(io::load_project(file), options, where);
        QCOMPARE(run.run(nullptr).status, train::RunStatus::Finished);
        store::RunStore store = store::RunStore::open(folder + "/runs.sqlite");
        QVERIFY(store.feature_map_layers(run.id()).empty());
        QVERIFY(store.feature_map_capture_steps(run.id()).empty());
        QVERIFY(!store.probe_input(run.id()));
    }
};

QTEST_MAIN(TestFeatureMaps)
#include "test_feature_maps.moc"
