// train/layer_inspection: per-layer statistics read back from the run store, in model order,
// at the nearest recorded step.
#include <myelin/graph/model_spec.h>
#include <myelin/io/project.h>
#include <myelin/store/run_store.h>
#include <myelin/train/layer_inspection.h>
#include <myelin/train/store_sink.h>

#include "test_support.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <limits>

using namespace myelin;
namespace lm = train::layer_metric;

namespace {

// Input -> zeta (Linear) -> ReLU (module "1") -> alpha (Linear) -> Output: forward order is not
// alphabetical order.
std::string project_json() {
    io::Project project;
    graph::ModelSpec& m = project.model;
    const auto in = m.add_node("Input", "", {{"shape", std::vector<int64_t>{4}}});
    const auto zeta =
        m.add_node("Linear", "zeta", {{"in_features", int64_t(4)}, {"out_features", int64_t(3)}});
    const auto relu = m.add_node("ReLU");
    const auto alpha =
        m.add_node("Linear", "alpha", {{"in_features", int64_t(3)}, {"out_features", int64_t(2)}});
    const auto out = m.add_node("Output");
    m.connect(in, zeta);
    m.connect(zeta, relu);
    m.connect(relu, alpha);
    m.connect(alpha, out);
    return io::serialize_project(project);
}

} // namespace

class TestLayerInspection : public QObject {
    Q_OBJECT

  private slots:
    void nearestPointOfASeries() {
        QTemporaryDir dir;
        store::RunStore store = store::RunStore::open(dir.filePath("runs.sqlite").toStdString());
        const int64_t run = store.create_run({"steps", "{}"});
        for (int64_t step : {10, 20, 30})
            store.log_metric(run, "grad_norm/fc", step, double(step) / 10);
        const auto nearest = [&](int64_t step) {
            return store.nearest_metric_point(run, "grad_norm/fc", step)->step;
        };
        QCOMPARE(nearest(0), int64_t(10));
        QCOMPARE(nearest(14), int64_t(10));
        QCOMPARE(nearest(15), int64_t(10)); // a tie: the earlier
        QCOMPARE(nearest(16), int64_t(20));
        QCOMPARE(nearest(20), int64_t(20));
        QCOMPARE(nearest(std::numeric_limits<int64_t>::max()), int64_t(30));
        QCOMPARE(store.nearest_metric_point(run, "grad_norm/fc", 21)->value, 2.0);
        QVERIFY(!store.nearest_metric_point(run, "grad_norm/other", 5));
    }

    void layersInModelOrderAtTheNearestStep() {
        QTemporaryDir dir;
        store::RunStore store = store::RunStore::open(dir.filePath("runs.sqlite").toStdString());
        const int64_t run = store.create_run({"inspect", project_json()});
        std::vector<store::MetricPoint> points;
        const auto add = [&](std::string_view family, const char* layer, int64_t step, double v) {
            points.push_back({run, train::layer_metric_key(family, layer), step, v, 0});
        };
        // Norms every 5 steps for the layers with parameters; summaries every 10 for all.
        for (int64_t step = 5; step <= 30; step += 5)
            for (const char* layer : {"alpha", "zeta"}) {
                add(lm::kGradNorm, layer, step, double(step) + (layer[0] == 'z' ? 0.5 : 0.25));
                add(lm::kWeightNorm, layer, step, 2.0);
                add(lm::kUpdateRatio, layer, step, 1e-3);
            }
        for (int64_t step = 10; step <= 30; step += 10)
            for (const char* layer : {"alpha", "zeta", "1"}) {
                add(lm::kActivationMean, layer, step, double(step) / 10);
                add(lm::kActivationStd, layer, step, 1.0);
                add(lm::kActivationZeros, layer, step, layer[0] == '1' ? 0.75 : 0.0);
                add(lm::kActivationNonFinite, layer, step, 0);
                add(lm::kGradientNonFinite, layer, step, layer[0] == 'a' ? 3 : 0);
            }
        // A layer the model does not have (recorded by an older version of the project).
        add(lm::kGradNorm, "old", 5, 1.0);
        store.log_metrics(points);
        store.flush();

        const auto layers = train::recorded_layers(store, run);
        QCOMPARE(layers.size(), size_t(4));
        QCOMPARE(layers[0].name, std::string("zeta"));
        QCOMPARE(layers[0].kind, std::string("Linear"));
        QCOMPARE(layers[1].name, std::string("1"));
        QCOMPARE(layers[1].kind, std::string("ReLU"));
        QCOMPARE(layers[2].name, std::string("alpha"));
        QCOMPARE(layers[3].name, std::string("old"));
        QVERIFY(layers[3].kind.empty());

        // Newest by default.
        const train::LayerStatsTable newest = train::layer_stats_at(store, run);
        QCOMPARE(*newest.norms_step, int64_t(30));
        QCOMPARE(*newest.summaries_step, int64_t(30));
        QCOMPARE(*newest.rows[0].grad_norm, 30.5);

        // Step 17: norms from 15, summaries from 20; each value is the store's at that step.
        const train::LayerStatsTable t = train::layer_stats_at(store, run, 17);
        QCOMPARE(*t.requested_step, int64_t(17));
        QCOMPARE(*t.norms_step, int64_t(15));
        QCOMPARE(*t.summaries_step, int64_t(20));
        QCOMPARE(t.rows.size(), size_t(4));
        const auto& zeta = t.rows[0];
        QCOMPARE(*zeta.grad_norm, 15.5);
        QCOMPARE(*zeta.weight_norm, 2.0);
        QCOMPARE(*zeta.update_ratio, 1e-3);
        QCOMPARE(*zeta.activation_mean, 2.0);
        QCOMPARE(*zeta.nonfinite, 0.0);
        const auto& relu = t.rows[1];
        QVERIFY(!relu.grad_norm); // no parameters: no norms
        QCOMPARE(*relu.zero_fraction, 0.75);
        QCOMPARE(*t.rows[2].grad_norm, 15.25);
        QCOMPARE(*t.rows[2].nonfinite, 3.0);
        QVERIFY(!t.rows[3].grad_norm); // "old" has no point at step 15

        const QString text = QString::fromStdString(train::format_layer_stats(t));
        QVERIFY2(text.startsWith("norms: step 15; activations: step 20 (nearest recorded to step "
                                 "17)\n"),
                 qPrintable(text));
        const QStringList lines = text.split('\n', Qt::SkipEmptyParts);
        QCOMPARE(lines.size(), 6); // the steps, the header, 4 layers
        QVERIFY2(lines[2].startsWith("zeta (Linear)") && lines[2].contains("15.5") &&
                     lines[2].contains("0.0%"),
                 qPrintable(lines[2]));
        QVERIFY2(lines[3].startsWith("1 (ReLU)") && lines[3].contains("75.0%") &&
                     lines[3].contains(" - "),
                 qPrintable(lines[3]));

        // Badges: health per layer and a sparkline of the gradient norm up to the step.
        const auto badges = train::layer_badges_at(store, run, 17, 8);
        QCOMPARE(badges.size(), size_t(4));
        QCOMPARE(badges[0].layer.name, std::string("zeta"));
        QCOMPARE(badges[0].health, train::LayerHealth::Healthy);
        QCOMPARE(*badges[0].grad_norm, 15.5);
        QCOMPARE(badges[0].recent_grad_norms.size(), size_t(3)); // steps 5, 10, 15
        QCOMPARE(badges[0].recent_grad_norms.back(), 15.5);
        QCOMPARE(badges[1].health, train::LayerHealth::Healthy);   // 75% zeros: under 90%
        QCOMPARE(badges[2].health, train::LayerHealth::NonFinite); // 3 non-finite gradients
        QVERIFY(badges[1].recent_grad_norms.empty());

        // Frozen while paused after step 20 (a kFrozenEvent, as StoreSink records RunChanged):
        // from the norms of step 25 on zeta is frozen, not judged by its gradient; unfrozen after
        // step 25, it is judged again at 30.
        store.log_event(run, {20, train::kFrozenEvent, "zeta", "frozen"});
        store.log_event(run, {25, train::kFrozenEvent, "zeta", "training"});
        store.flush();
        QCOMPARE(train::layer_badges_at(store, run, 20)[0].health, train::LayerHealth::Healthy);
        const auto frozen = train::layer_badges_at(store, run, 25);
        QCOMPARE(frozen[0].health, train::LayerHealth::Frozen);
        QVERIFY(QString::fromStdString(frozen[0].reason).contains("frozen"));
        QCOMPARE(train::layer_badges_at(store, run, 30)[0].health, train::LayerHealth::Healthy);
    }

    void healthOfALayer() {
        using train::LayerHealth;
        const auto health = [](std::optional<double> grad, std::optional<double> zeros,
                               std::optional<double> nonfinite, double median, bool activation) {
            train::LayerStatsRow row;
            row.grad_norm = grad;
            row.zero_fraction = zeros;
            row.nonfinite = nonfinite;
            return train::classify_layer(row, median, activation);
        };
        QCOMPARE(health(0.5, 0.4, 0, 0.6, true), LayerHealth::Healthy);
        QCOMPARE(health(0.5, 0.95, 0, 0.6, true), LayerHealth::Dead);
        QCOMPARE(health(0.5, 0.95, 0, 0.6, false), LayerHealth::Healthy);  // zeros after a pool
        QCOMPARE(health(0.5, 0.95, 3, 0.6, true), LayerHealth::NonFinite); // the worst first
        QCOMPARE(health(std::nan(""), {}, {}, 0.6, false), LayerHealth::NonFinite);
        QCOMPARE(health(1e-5, {}, {}, 0.6, false), LayerHealth::Vanishing); // < 1e-3 x median
        QCOMPARE(health(1e-3, {}, {}, 0.6, false), LayerHealth::Healthy);
        QCOMPARE(health(1e-8, {}, {}, 0, false), LayerHealth::Vanishing);  // absolute floor
        QCOMPARE(health(700, {}, {}, 0.6, false), LayerHealth::Exploding); // > 1000 x median
        QCOMPARE(health(2e4, {}, {}, 0, false), LayerHealth::Exploding);   // absolute ceiling
        QCOMPARE(health({}, {}, {}, 0.6, false), LayerHealth::Unknown);
        std::string reason;
        train::LayerStatsRow dead;
        dead.zero_fraction = 1.0;
        QCOMPARE(train::classify_layer(dead, 0, true, &reason), LayerHealth::Dead);
        QCOMPARE(reason, std::string("100% of its outputs are exactly zero (dead units)"));
    }

    void histogramsRebinnedAndQuantiles() {
        // 4 bins over [0, 4): counts 1, 2, 3, 4.
        const store::HistogramSample h{1, 0, 0.0, 4.0, {1, 2, 3, 4}};
        // The same range in 8 bins: each count split in halves.
        const auto fine = train::rebin_histogram(h, 0, 4, 8);
        QCOMPARE(fine, std::vector<double>({0.5, 0.5, 1, 1, 1.5, 1.5, 2, 2}));
        // A wider range: [-4, 4) in 4 bins of 2 puts everything in the top two.
        QCOMPARE(train::rebin_histogram(h, -4, 4, 4), std::vector<double>({0, 0, 3, 7}));
        // A narrower one drops what lies outside: [1, 3) keeps 2 + 3.
        const auto middle = train::rebin_histogram(h, 1, 3, 2);
        QCOMPARE(middle, std::vector<double>({2, 3}));
        // A histogram of one value (min == max) lands in one bin.
        const store::HistogramSample point{1, 0, 2.0, 2.0, {5}};
        QCOMPARE(train::rebin_histogram(point, 0, 4, 4), std::vector<double>({0, 0, 5, 0}));

        // Quantiles: 10 values, uniform inside bins. The median: 5 of 10 counts lie below
        // 1 (1) + 2 (2) + 2 of bin [2, 3) (3 counts) -> 2 + 2/3.
        const auto q = train::histogram_quantiles(h, {0.0, 0.1, 0.5, 1.0});
        QCOMPARE(q[0], 0.0);
        QCOMPARE(q[1], 1.0); // the single count of bin 0 fills it exactly
        QCOMPARE(q[2], 2.0 + 2.0 / 3.0);
        QCOMPARE(q[3], 4.0);
        QVERIFY(std::isnan(train::histogram_quantiles({1, 0, 0, 1, {0, 0}}, {0.5})[0]));
    }

    void aRunWithoutCaptureSaysSo() {
        QTemporaryDir dir;
        store::RunStore store = store::RunStore::open(dir.filePath("runs.sqlite").toStdString());
        const int64_t run = store.create_run({"plain", "{not json"});
        store.log_metric(run, "loss", 1, 0.5);
        store.flush();
        const auto table = train::layer_stats_at(store, run, 3);
        QVERIFY(table.rows.empty());
        QVERIFY(!table.norms_step);
        QVERIFY(QString::fromStdString(train::format_layer_stats(table)).contains("no per-layer"));
        QVERIFY(
            error_of<store::StoreError>([&] { train::layer_stats_at(store, 99); }).contains("99"));
    }
};

QTEST_GUILESS_MAIN(TestLayerInspection)
#include "test_layer_inspection.moc"
