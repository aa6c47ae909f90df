#include "inspect/gradient_flow_view.h"

#include "inspect/recorded_changes.h"
#include "inspect/view_frame.h"
#include "widgets/theme.h"

#include <myelin/error.h>
#include <myelin/graph/registry.h>
#include <myelin/store/run_store.h>

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QShowEvent>
#include <QSlider>
#include <QStackedWidget>

#include <algorithm>
#include <cmath>
#include <limits>

namespace myelin::ui {

namespace lm = train::layer_metric;

namespace {

// A finished run's series is read as this many min/max buckets per layer: about one per pixel
// column of a wide plot. It also decides what the store reads: with 1000 buckets a 100k-step
// series comes from the store's 16-step block summaries (6,250 rows) instead of its 100k points
// (2000 buckets read every point: ~1 s for 10 layers; bench/bench_inspect_open.cpp).
constexpr int kBuckets = 1000;
constexpr int kPollMs = 250;

// Layers of one category share its hue; the k-th of them turns the hue a little and takes a
// lighter or darker shade, so neighbours on the plot stay apart.
QColor layerColor(const std::string& kind, int indexInCategory) {
    const graph::LayerKind* layer = graph::find_layer_kind(kind);
    const QColor base = layer ? categoryColor(layer->category) : colors::kMutedText;
    static const int kHueTurns[] = {0, 25, -25, 50, -50};
    static const int kLightness[] = {0, 45, -35, 80, -55};
    const int k = indexInCategory % 5;
    const int hue = (std::max(base.hslHue(), 0) + kHueTurns[k] + 360) % 360;
    const int lightness = std::clamp(base.lightness() + kLightness[k], 30, 200);
    return QColor::fromHsl(hue, base.hslSaturation(), lightness);
}

// "7 (Linear)": a layer's module name and, where the model names it, its kind.
QString layerLabel(const train::RecordedLayer& layer) {
    return QString::fromStdString(layer.kind.empty() ? layer.name
                                                     : layer.name + " (" + layer.kind + ")");
}

// Log axes cannot show zero, negative or non-finite values; those points are left out of the
// lines (the bars and `myelin runs layers` still show them).
bool plottable(double value) {
    return std::isfinite(value) && value > 0;
}

} // namespace

GradientFlowView::GradientFlowView(QWidget* parent) : QWidget(parent), shownRun_(this, kPollMs) {
    setObjectName(QStringLiteral("gradientFlowView"));
    runBox_ = new QComboBox(this);
    runBox_->setObjectName(QStringLiteral("inspectRun"));
    runBox_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    runBox_->setMinimumContentsLength(24);
    measureBox_ = new QComboBox(this);
    measureBox_->setObjectName(QStringLiteral("inspectMeasure"));
    measureBox_->addItem(tr("Gradient norm"), int(Measure::GradientNorm));
    measureBox_->addItem(tr("Update / weight ratio"), int(Measure::UpdateRatio));
    measureBox_->addItem(tr("Weight norm"), int(Measure::WeightNorm));
    measureBox_->addItem(tr("Mean / max |grad|"), int(Measure::GradientMagnitude));
    measureBox_->setToolTip(
        tr("Gradient norm: L2 norm of the layer's parameter gradients.\n"
           "Update / weight ratio: how far one optimizer step moves the weights, relative to "
           "their size (about 1e-3 is healthy).\nWeight norm: L2 norm of the layer's weights."));
    stateLabel_ = new QLabel(this);
    stateLabel_->setObjectName(QStringLiteral("inspectState"));
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Run"), this));
    top->addWidget(runBox_);
    top->addSpacing(12);
    top->addWidget(new QLabel(tr("Show"), this));
    top->addWidget(measureBox_);
    top->addSpacing(12);
    top->addWidget(stateLabel_, 1);

    lines_ = new QCustomPlot(this);
    lines_->setObjectName(QStringLiteral("inspectLines"));
    stylePlot(lines_, {lines_->xAxis, lines_->yAxis});
    lines_->xAxis->setLabel(tr("step"));
    lines_->yAxis->setScaleType(QCPAxis::stLogarithmic);
    lines_->legend->setVisible(true);
    lines_->legend->setBrush(QBrush(colors::kLegendBackground));
    lines_->legend->setBorderPen(QPen(colors::kBorder));
    lines_->legend->setFont(QFont(lines_->font().family(), 7));
    lines_->legend->setSelectedFont(QFont(lines_->font().family(), 7));
    lines_->legend->setIconSize(14, 8);
    lines_->legend->setRowSpacing(-2);
    lines_->legend->setSelectableParts(QCPLegend::spItems);
    lines_->setToolTip(tr("Click a layer in the legend to hide or show its line; drag or wheel "
                          "to move along the steps"));
    lines_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom | QCP::iSelectLegend);
    lines_->axisRect()->setRangeDrag(Qt::Horizontal);
    lines_->axisRect()->setRangeZoom(Qt::Horizontal);
    // Clicking a layer in the legend hides or shows its line (greyed out while hidden).
    connect(lines_, &QCustomPlot::legendClick, this,
            [this](QCPLegend*, QCPAbstractLegendItem* item, QMouseEvent*) {
                auto* plottable = qobject_cast<QCPPlottableLegendItem*>(item);
                if (!plottable) return;
                QCPAbstractPlottable* graph = plottable->plottable();
                graph->setVisible(!graph->visible());
                item->setTextColor(graph->visible() ? colors::kText : colors::kBorder);
                item->setSelected(false);
                lines_->replot();
            });
    lines_->addLayer(QStringLiteral("highlight"), lines_->layer(QStringLiteral("main")),
                     QCustomPlot::limAbove);
    stepMarker_ = new QCPItemStraightLine(lines_);
    stepMarker_->setPen(QPen(colors::kAccent, 1, Qt::DashLine));
    guide_ = new QCPItemStraightLine(lines_);
    guide_->setPen(QPen(colors::kWarning, 1.2, Qt::DashDotLine));
    guide_->point1->setCoords(0, 1e-3);
    guide_->point2->setCoords(1, 1e-3);
    changeMarks_ = std::make_unique<ChangeMarks>(lines_);

    bars_ = new QCustomPlot(this);
    bars_->setObjectName(QStringLiteral("inspectBars"));
    stylePlot(bars_, {bars_->xAxis, bars_->yAxis});
    bars_->yAxis->setScaleType(QCPAxis::stLogarithmic);
    bars_->xAxis->setTickLabelRotation(35);
    barItems_ = new QCPBars(bars_->xAxis, bars_->yAxis);
    barItems_->setPen(Qt::NoPen);
    barItems_->setBrush(colors::kAccent);
    barItems_->setWidth(0.7);
    meanBars_ = new QCPBars(bars_->xAxis, bars_->yAxis);
    meanBars_->setPen(Qt::NoPen);
    meanBars_->setBrush(colors::kAccent.darker(150));
    meanBars_->setWidth(0.4);

    stepSlider_ = new QSlider(Qt::Horizontal, this);
    stepSlider_->setObjectName(QStringLiteral("inspectStep"));
    stepLabel_ = new QLabel(this);
    stepLabel_->setMinimumWidth(110);
    followNewest_ = new QCheckBox(tr("Follow newest"), this);
    followNewest_->setObjectName(QStringLiteral("inspectFollow"));
    followNewest_->setToolTip(tr("Keep the bars on the newest recorded step while a run goes"));
    auto* stepRow = new QHBoxLayout;
    stepRow->addWidget(new QLabel(tr("Step"), this));
    stepRow->addWidget(stepSlider_, 1);
    stepRow->addWidget(stepLabel_);
    stepRow->addWidget(followNewest_);

    const ViewFrame frame =
        makeViewFrame(this, top, lines_, bars_, stepRow, QStringLiteral("inspectMessage"));
    stack_ = frame.stack;
    message_ = frame.message;
    plotPage_ = frame.plots;

    // Hidden, it still reads the new rows (the canvas badges follow them) but does not replot.
    shownRun_.setPoll([this] { readNewRows(); });
    connect(runBox_, &QComboBox::activated, this, [this](int index) {
        const int64_t run = runBox_->itemData(index).toLongLong();
        if (run != shownRun_.run()) showRun(run, false);
    });
    connect(measureBox_, &QComboBox::activated, this,
            [this](int index) { setMeasure(Measure(measureBox_->itemData(index).toInt())); });
    connect(stepSlider_, &QSlider::valueChanged, this, [this](int value) {
        if (table_.norms_step && value == *table_.norms_step) return;
        selectStep(value);
    });
    connect(followNewest_, &QCheckBox::toggled, this, [this](bool on) {
        if (on) moveBars(std::numeric_limits<int64_t>::max());
    });
    showMessage(tr("No run to show yet. Train the model (Training tab): each layer's gradient "
                   "norm appears here while it trains."));
}

GradientFlowView::~GradientFlowView() = default;

bool GradientFlowView::openStore(const QString& path) {
    QString error;
    const bool open = shownRun_.open(path, &error);
    if (!error.isEmpty()) showMessage(tr("Cannot read the run store: %1").arg(error));
    return open;
}

void GradientFlowView::setStorePath(const QString& path) {
    if (path == shownRun_.path() && shownRun_.store()) return;
    // No run of the new store is shown yet. (The store changes only when no run trains: a new
    // run's store is set after the last one finished, and the studio opens another store only
    // between runs.)
    shownRun_.show(-1, false);
    if (!openStore(path)) {
        runBox_->clear();
        return;
    }
    refreshRuns();
}

void GradientFlowView::refreshRuns() {
    if (!openStore(shownRun_.path())) {
        runBox_->clear();
        return;
    }
    std::vector<store::RunSummary> runs;
    try {
        runs = shownRun_.store()->list_runs();
    } catch (const Error& e) {
        showMessage(tr("Cannot read the run store: %1").arg(QString::fromStdString(e.what())));
        return;
    }
    const QSignalBlocker blocker(runBox_);
    runBox_->clear();
    for (const auto& summary : runs) {
        const store::Run& r = summary.run;
        runBox_->addItem(tr("#%1 %2 (%3)")
                             .arg(r.id)
                             .arg(QString::fromStdString(r.name),
                                  QString::fromLatin1(store::status_name(r.status))),
                         qint64(r.id));
    }
    const int shown = runBox_->findData(qint64(shownRun_.run()));
    if (shown >= 0) runBox_->setCurrentIndex(shown);
    if (shownRun_.run() < 0 && !runs.empty()) showRun(runs.front().run.id, false);
}

void GradientFlowView::showRun(int64_t run, bool live) {
    if (!openStore(shownRun_.path())) return;
    shownRun_.show(run, live); // polls while live
    if (runBox_->findData(qint64(run)) < 0) refreshRuns();
    const QSignalBlocker blocker(runBox_);
    runBox_->setCurrentIndex(runBox_->findData(qint64(run)));
    followNewest_->setChecked(live);
    setLiveRendering(live);
    reload();
    emit runShown(run, live);
}

void GradientFlowView::setLiveRendering(bool live) {
    // Antialiased lines cost a replot about 12 ms of CPU against 3 without (fashion_cnn, 10
    // layers): while a run streams, the GUI thread shares 2 cores with training, so lines are
    // drawn plain and smoothed again once the run ends.
    for (QCustomPlot* plot : {lines_, bars_})
        if (live)
            plot->setNotAntialiasedElements(QCP::aePlottables | QCP::aeItems);
        else
            plot->setAntialiasedElements(QCP::aePlottables | QCP::aeItems);
}

void GradientFlowView::runFinished() {
    if (!shownRun_.live()) return;
    readNewRows(); // what it wrote last, still as live
    shownRun_.finish();
    setLiveRendering(false);
    refreshRuns(); // the status in the run list
    updateStepControls();
}

void GradientFlowView::setMeasure(Measure measure) {
    measure_ = measure;
    measureBox_->setCurrentIndex(measureBox_->findData(int(measure)));
    reload();
}

std::string GradientFlowView::family() const {
    switch (measure_) {
    case Measure::UpdateRatio:
        return std::string(lm::kUpdateRatio);
    case Measure::WeightNorm:
        return std::string(lm::kWeightNorm);
    case Measure::GradientMagnitude:
        return std::string(lm::kGradMaxAbs);
    case Measure::GradientNorm:
        break;
    }
    return std::string(lm::kGradNorm);
}

void GradientFlowView::showMessage(const QString& text) {
    message_->setText(text);
    stack_->setCurrentWidget(message_);
}

void GradientFlowView::reload() {
    const std::optional<int64_t> keep = table_.norms_step; // the step the bars were on
    lines_->clearGraphs();
    graphs_.clear();
    colors_.clear();
    lastStep_.clear();
    layers_.clear();
    modelLayers_.clear();
    table_ = {};
    guide_->setVisible(measure_ == Measure::UpdateRatio);
    changeMarks_->clear();
    store::RunStore* store = shownRun_.store();
    const int64_t run = shownRun_.run();
    if (run < 0 || !store) {
        emit badgesChanged({});
        return;
    }
    try {
        const std::string fam = family();
        std::map<int, int> perCategory;
        modelLayers_ = train::run_model_layers(*store, run);
        changeMarks_->set(recordedChanges(*store, run), colors::kWarning);
        for (const auto& layer : train::recorded_layers(*store, run, modelLayers_)) {
            const std::string key = train::layer_metric_key(fam, layer.name);
            const auto buckets = store->metric_series_downsampled(run, key, {}, kBuckets);
            if (buckets.empty()) continue; // no parameters: no norms
            const graph::LayerKind* kind = graph::find_layer_kind(layer.kind);
            const int category = kind ? int(kind->category) : -1;
            QCPGraph* graph = lines_->addGraph();
            graph->setName(layerLabel(layer));
            colors_[layer.name] = layerColor(layer.kind, perCategory[category]++);
            QVector<QCPGraphData> points;
            points.reserve(int(buckets.size()) * 4);
            for (const auto& b : buckets) {
                // One point per step where a bucket holds one; otherwise first, min, max, last,
                // so a spike inside a bucket stays visible.
                const auto add = [&](double step, double value) {
                    if (plottable(value)) points.append(QCPGraphData(step, value));
                };
                add(double(b.first_step), b.first);
                if (b.count > 2) {
                    const double span = double(b.last_step - b.first_step);
                    add(b.first_step + span / 3, b.min);
                    add(b.first_step + 2 * span / 3, b.max);
                }
                if (b.count > 1) add(double(b.last_step), b.last);
            }
            graph->data()->set(points, true);
            graphs_[layer.name] = graph;
            lastStep_[layer.name] = buckets.back().last_step;
            layers_.push_back(layer);
        }
    } catch (const Error& e) {
        showMessage(tr("Cannot read run %1: %2").arg(run).arg(QString::fromStdString(e.what())));
        return;
    }
    if (layers_.empty()) {
        emit badgesChanged({});
        showMessage(shownRun_.live()
                        ? tr("Run #%1 is starting: each layer's norms appear here after its "
                             "first optimizer step.")
                              .arg(run)
                        : tr("Run #%1 recorded no per-layer norms (Training > Capture > "
                             "layer norms was off, or it stopped before its first step).")
                              .arg(run));
        stateLabel_->clear();
        return;
    }
    stack_->setCurrentWidget(plotPage_);
    highlightLayer(highlighted_); // the pens
    lines_->rescaleAxes();
    moveBars(followNewest_->isChecked() || !keep ? std::numeric_limits<int64_t>::max() : *keep);
}

void GradientFlowView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (shownRun_.live()) readNewRows(); // catch up with what was recorded while hidden
    replot();
}

void GradientFlowView::readNewRows() {
    store::RunStore* store = shownRun_.store();
    const int64_t run = shownRun_.run();
    if (!store || run < 0) return;
    if (layers_.empty()) { // the first rows of a starting run
        reload();
        return;
    }
    try {
        const std::string fam = family();
        bool grew = false;
        for (const auto& layer : layers_) {
            int64_t& last = lastStep_[layer.name];
            const auto rows = store->metric_series(run, train::layer_metric_key(fam, layer.name),
                                                   {last + 1, std::numeric_limits<int64_t>::max()});
            if (rows.empty()) continue;
            QCPGraph* graph = graphs_.at(layer.name);
            for (const auto& row : rows)
                if (plottable(row.value)) graph->addData(double(row.step), row.value);
            last = rows.back().step;
            grew = true;
        }
        if (!grew) return;
        changeMarks_->set(recordedChanges(*store, run), colors::kWarning); // made while live
    } catch (const Error& e) {
        shownRun_.stopPolling();
        showMessage(tr("Cannot read run %1: %2").arg(run).arg(QString::fromStdString(e.what())));
        return;
    }
    if (followNewest_->isChecked()) {
        lines_->rescaleAxes();
        moveBars(std::numeric_limits<int64_t>::max());
    } else {
        updateStepControls();
        replot();
    }
}

void GradientFlowView::highlightLayer(const std::string& layer) {
    highlighted_ = layer;
    const bool any = graphs_.count(layer) > 0;
    for (const auto& [name, graph] : graphs_) {
        QColor color = colors_[name];
        if (any && name != layer) color.setAlpha(70);
        // 1 px, not wider: Qt strokes thin pens with its fast cosmetic stroker and wider ones
        // through the general path stroker, which made opening a 100k-step run take 0.5 s.
        graph->setPen(QPen(color, any && name == layer ? 2.6 : 1.0));
        graph->setLayer(QLatin1String(any && name == layer ? "highlight" : "main")); // on top
    }
    replot();
}

void GradientFlowView::setFollowNewest(bool follow) {
    followNewest_->setChecked(follow); // its toggled handler moves the bars when on
    if (!follow) updateStepControls();
}

void GradientFlowView::selectStep(int64_t step) {
    const QSignalBlocker blocker(followNewest_);
    followNewest_->setChecked(false); // a step chosen stays chosen
    moveBars(step);
}

void GradientFlowView::moveBars(int64_t step) {
    store::RunStore* store = shownRun_.store();
    const int64_t run = shownRun_.run();
    if (!store || run < 0 || layers_.empty()) return;
    std::vector<train::LayerBadge> badges;
    try {
        table_ = train::layer_stats_at(*store, run, step, modelLayers_);
        badges = train::layer_badges(*store, run, table_);
    } catch (const Error& e) {
        showMessage(tr("Cannot read run %1: %2").arg(run).arg(QString::fromStdString(e.what())));
        return;
    }
    updateBars();
    updateStepControls();
    replot();
    emit badgesChanged(badges);
}

void GradientFlowView::updateBars() {
    // A bar only where there is a value to draw on the log axis: QCPBars draws a NaN as a bar
    // of the whole height (a frozen layer's zero gradient showed as the tallest bar).
    QVector<double> ticks, barKeys, values, meanKeys, means;
    QVector<QString> labels;
    const bool magnitude = measure_ == Measure::GradientMagnitude;
    for (const auto& row : table_.rows) {
        if (!graphs_.count(row.layer.name)) continue;
        const std::optional<double>& value = measure_ == Measure::UpdateRatio  ? row.update_ratio
                                             : measure_ == Measure::WeightNorm ? row.weight_norm
                                             : magnitude                       ? row.grad_max_abs
                                                                               : row.grad_norm;
        const double tick = double(ticks.size());
        ticks.append(tick);
        labels.append(layerLabel(row.layer));
        if (value && plottable(*value)) {
            barKeys.append(tick);
            values.append(*value);
        }
        const std::optional<double>& mean = row.grad_mean_abs;
        if (magnitude && mean && plottable(*mean)) {
            meanKeys.append(tick);
            means.append(*mean);
        }
    }
    barItems_->setData(barKeys, values, true);
    barItems_->setBrush(magnitude ? colors::kBarBehind : colors::kAccent);
    meanBars_->setData(meanKeys, means, true);
    meanBars_->setVisible(magnitude);
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    ticker->addTicks(ticks, labels);
    bars_->xAxis->setTicker(ticker);
    bars_->xAxis->setRange(-0.6, ticks.size() - 0.4);
    // Log bars need a floor: under the smallest value, so every bar shows.
    double low = std::numeric_limits<double>::infinity(), high = 0;
    for (const QVector<double>* series : {&values, &means})
        for (double v : *series)
            if (plottable(v)) low = std::min(low, v), high = std::max(high, v);
    if (guide_->visible()) low = std::min(low, 1e-3), high = std::max(high, 1e-3);
    if (high > 0) {
        barItems_->setBaseValue(low / 4);
        meanBars_->setBaseValue(low / 4);
        bars_->yAxis->setRange(low / 4, high * 2);
    }
    if (guide_->visible()) lines_->yAxis->setRange(lines_->yAxis->range().expanded(1e-3));
    setLogTicks(bars_->yAxis);
    setLogTicks(lines_->yAxis);
    bars_->yAxis->setLabel(table_.norms_step ? tr("step %1").arg(*table_.norms_step) : QString());
    bars_->setToolTip(magnitude ? tr("Per layer at the selected step: max |grad| (light) and "
                                     "mean |grad| (dark) over its parameter gradients")
                                : QString());
    lines_->yAxis->setLabel(magnitude ? tr("max |grad|") : measureBox_->currentText());
}

void GradientFlowView::updateStepControls() {
    const QSignalBlocker blocker(stepSlider_);
    int64_t first = 0, last = 0;
    for (const auto& [name, graph] : graphs_) {
        bool found = false;
        const QCPRange keys = graph->getKeyRange(found);
        if (!found) continue;
        first = int64_t(keys.lower);
        last = std::max(last, int64_t(keys.upper));
    }
    stepSlider_->setRange(int(first), int(std::max(first, last)));
    if (table_.norms_step) stepSlider_->setValue(int(*table_.norms_step));
    stepLabel_->setText(table_.norms_step ? tr("step %1").arg(*table_.norms_step) : QString());
    stepMarker_->setVisible(table_.norms_step.has_value());
    if (table_.norms_step) {
        stepMarker_->point1->setCoords(double(*table_.norms_step), 1);
        stepMarker_->point2->setCoords(double(*table_.norms_step), 2);
    }
    stateLabel_->setText(
        shownRun_.live()
            ? tr("● live: %1 layers, newest step %2").arg(layers_.size()).arg(last)
            : tr("%1 layers, steps %2 to %3").arg(layers_.size()).arg(first).arg(last));
    emit stepsChanged(shownRun_.run(), table_.norms_step.value_or(last), first, last,
                      followNewest_->isChecked());
}

void GradientFlowView::replot() {
    if (!isVisible()) return; // showEvent replots (a hidden plot has no size to paint into)
    lines_->replot(QCustomPlot::rpQueuedReplot);
    bars_->replot(QCustomPlot::rpQueuedReplot);
}

std::vector<std::string> GradientFlowView::plottedLayers() const {
    std::vector<std::string> names;
    for (const auto& layer : layers_)
        names.push_back(layer.name);
    return names;
}

std::optional<double> GradientFlowView::plottedValue(const std::string& layer, int64_t step) const {
    const auto it = graphs_.find(layer);
    if (it == graphs_.end()) return std::nullopt;
    const auto data = it->second->data();
    const auto point = data->findBegin(double(step), false);
    if (point == data->constEnd() || point->key != double(step)) return std::nullopt;
    return point->value;
}

std::optional<double> GradientFlowView::barValue(const std::string& layer) const {
    return valueOfBar(barItems_, layer);
}

std::optional<double> GradientFlowView::meanBarValue(const std::string& layer) const {
    return valueOfBar(meanBars_, layer);
}

std::optional<double> GradientFlowView::valueOfBar(const QCPBars* bars,
                                                   const std::string& layer) const {
    // Bars stand at 0, 1, ... in the order of the table's plotted layers.
    int index = 0;
    for (const auto& row : table_.rows) {
        if (!graphs_.count(row.layer.name)) continue;
        if (row.layer.name == layer) {
            const auto data = bars->data();
            const auto bar = data->findBegin(index, false);
            if (bar == data->constEnd() || bar->key != double(index) || std::isnan(bar->value))
                return std::nullopt; // no bar there: nothing to draw on the log axis
            return bar->value;
        }
        ++index;
    }
    return std::nullopt;
}

QString GradientFlowView::message() const {
    return stack_->currentWidget() == message_ ? message_->text() : QString();
}

} // namespace myelin::ui
