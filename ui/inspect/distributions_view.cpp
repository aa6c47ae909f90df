#include "inspect/distributions_view.h"

#include "inspect/recorded_changes.h"
#include "inspect/view_frame.h"
#include "widgets/theme.h"

#include <myelin/error.h>
#include <myelin/store/run_store.h>

#include <qcustomplot.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace myelin::ui {

namespace lm = train::layer_metric;

namespace {

constexpr int kValueBins = 64;
constexpr size_t kMaxRidges = 24; // more curves than this are a blur at a plot's height
const std::vector<double> kQuantiles = {0.05, 0.25, 0.5, 0.75, 0.95};

QCPColorGradient shareGradient() {
    // White (no values) to the accent colour (all of a step's values in one bin).
    QCPColorGradient gradient;
    gradient.clearColorStops();
    gradient.setColorStopAt(0, colors::kSurface);
    gradient.setColorStopAt(0.15, colors::kHeatmapLow);
    gradient.setColorStopAt(1, colors::kAccent.darker(140));
    gradient.setNanHandling(QCPColorGradient::nhNanColor);
    gradient.setNanColor(colors::kCanvas);
    return gradient;
}

QCPColorGradient zerosGradient() {
    // Green (few zeros) over amber to dark red (all zeros: dead units).
    QCPColorGradient gradient;
    gradient.clearColorStops();
    gradient.setColorStopAt(0, colors::kZerosMapLow);
    gradient.setColorStopAt(0.6, colors::kZerosMapMid);
    gradient.setColorStopAt(0.9, colors::kWarning);
    gradient.setColorStopAt(1, colors::kError.darker(130));
    gradient.setNanHandling(QCPColorGradient::nhNanColor);
    gradient.setNanColor(colors::kCanvas);
    return gradient;
}

QCPColorGradient nonFiniteGradient() {
    // Any count above zero is plainly red; more is darker.
    QCPColorGradient gradient;
    gradient.clearColorStops();
    gradient.setColorStopAt(0, colors::kSurface);
    gradient.setColorStopAt(1e-6, colors::kErrorSoft);
    gradient.setColorStopAt(0.02, colors::kError);
    gradient.setColorStopAt(1, colors::kError.darker(160));
    gradient.setNanHandling(QCPColorGradient::nhNanColor);
    gradient.setNanColor(colors::kCanvas);
    return gradient;
}

} // namespace

DistributionsView::DistributionsView(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("distributionsView"));
    layerBox_ = new QComboBox(this);
    layerBox_->setObjectName(QStringLiteral("distributionsLayer"));
    layerBox_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    kindBox_ = new QComboBox(this);
    kindBox_->setObjectName(QStringLiteral("distributionsKind"));
    kindBox_->addItem(tr("Activations"), false);
    kindBox_->addItem(tr("Gradients"), true);
    kindBox_->setToolTip(tr("Activations: the layer's outputs. Gradients: the gradient of the "
                            "loss with respect to those outputs."));
    modeBox_ = new QComboBox(this);
    modeBox_->setObjectName(QStringLiteral("distributionsMode"));
    modeBox_->addItem(tr("Heatmap"), int(Mode::Heatmap));
    modeBox_->addItem(tr("Percentile bands"), int(Mode::Percentiles));
    modeBox_->addItem(tr("Ridgeline"), int(Mode::Ridgeline));
    stripBox_ = new QComboBox(this);
    stripBox_->setObjectName(QStringLiteral("distributionsStripMetric"));
    stripBox_->addItem(tr("Zero fraction"), int(StripMetric::ZeroFraction));
    stripBox_->addItem(tr("NaN/Inf count"), int(StripMetric::NonFinite));
    stripBox_->setToolTip(tr("What the strip below shows for every layer at every captured "
                             "step: the share of exact zeros in its output (dead units), or "
                             "how many of its activations and gradients were NaN or infinite"));
    stateLabel_ = new QLabel(this);
    stateLabel_->setObjectName(QStringLiteral("distributionsState"));
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Layer"), this));
    top->addWidget(layerBox_);
    top->addSpacing(12);
    top->addWidget(kindBox_);
    top->addSpacing(12);
    top->addWidget(new QLabel(tr("Show"), this));
    top->addWidget(modeBox_);
    top->addSpacing(12);
    top->addWidget(new QLabel(tr("Strip"), this));
    top->addWidget(stripBox_);
    top->addSpacing(12);
    top->addWidget(stateLabel_, 1);

    plot_ = new QCustomPlot(this);
    plot_->setObjectName(QStringLiteral("distributionsPlot"));
    stylePlot(plot_, {plot_->xAxis, plot_->yAxis});
    plot_->xAxis->setLabel(tr("step"));
    plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    heatmap_ = new QCPColorMap(plot_->xAxis, plot_->yAxis);
    heatmap_->setGradient(shareGradient());
    heatmap_->setInterpolate(false);

    stripPlot_ = new QCustomPlot(this);
    stripPlot_->setObjectName(QStringLiteral("distributionsStrip"));
    stylePlot(stripPlot_, {stripPlot_->xAxis, stripPlot_->yAxis});
    stripPlot_->xAxis->setLabel(tr("step — share of exact zeros in each layer's output"));
    stripMap_ = new QCPColorMap(stripPlot_->xAxis, stripPlot_->yAxis);
    stripMap_->setGradient(zerosGradient());
    stripMap_->setDataRange(QCPRange(0, 1));
    stripMap_->setInterpolate(false);
    auto* scale = stripScale_ = new QCPColorScale(stripPlot_);
    stripPlot_->plotLayout()->addElement(0, 1, scale);
    scale->setType(QCPAxis::atRight);
    scale->setGradient(zerosGradient());
    scale->setDataRange(QCPRange(0, 1));
    auto fixed = QSharedPointer<QCPAxisTickerFixed>::create();
    fixed->setTickStep(0.5);
    scale->axis()->setTicker(fixed);
    scale->axis()->setTickLabels(true);
    scale->axis()->setTickLabelColor(colors::kMutedText);
    scale->axis()->setLabel(tr("zeros"));
    scale->axis()->setLabelColor(colors::kMutedText);
    scale->setBarWidth(8);
    stripMap_->setColorScale(scale);
    for (QCPItemStraightLine** marker : {&plotMarker_, &stripMarker_}) {
        *marker = new QCPItemStraightLine(marker == &plotMarker_ ? plot_ : stripPlot_);
        (*marker)->setPen(QPen(colors::kAccent, 1, Qt::DashLine));
        (*marker)->setVisible(false);
    }
    plotChanges_ = std::make_unique<ChangeMarks>(plot_);
    stripChanges_ = std::make_unique<ChangeMarks>(stripPlot_);
    nonFinite_ = new QLabel(this);
    nonFinite_->setObjectName(QStringLiteral("distributionsNonFinite"));
    nonFinite_->setWordWrap(true);
    nonFinite_->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed); // never squeezed

    auto* belowPlots = new QVBoxLayout;
    belowPlots->setContentsMargins(0, 0, 0, 0);
    belowPlots->addWidget(nonFinite_);
    const ViewFrame frame = makeViewFrame(this, top, plot_, stripPlot_, belowPlots,
                                          QStringLiteral("distributionsMessage"));
    stack_ = frame.stack;
    message_ = frame.message;
    plotPage_ = frame.plots;

    shownRun_.setPoll([this] {
        if (isVisible()) reload();
    });
    connect(layerBox_, &QComboBox::activated, this, [this] {
        loadLayer();
        draw();
    });
    connect(kindBox_, &QComboBox::activated, this, [this] {
        loadLayer();
        draw();
    });
    connect(modeBox_, &QComboBox::activated, this,
            [this](int index) { setMode(Mode(modeBox_->itemData(index).toInt())); });
    connect(stripBox_, &QComboBox::activated, this,
            [this](int index) { setStripMetric(StripMetric(stripBox_->itemData(index).toInt())); });
    showMessage(tr("No run to show yet. Activation and gradient histograms appear here once a "
                   "run has captured them (Training > Capture: summaries every 100 steps)."));
}

DistributionsView::~DistributionsView() = default;

bool DistributionsView::openStore(const QString& path) {
    QString error;
    const bool open = shownRun_.open(path, &error);
    if (!error.isEmpty()) showMessage(tr("Cannot read the run store: %1").arg(error));
    return open;
}

void DistributionsView::showRun(const QString& storePath, int64_t run, bool live) {
    if (!openStore(storePath)) return;
    shownRun_.show(run, live);
    reload();
}

void DistributionsView::runFinished() {
    if (!shownRun_.finish()) return;
    reload();
}

void DistributionsView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (shownRun_.live()) reload();
    plot_->replot();
    stripPlot_->replot();
}

void DistributionsView::setLayer(const std::string& layer) {
    const int index = layerBox_->findData(QString::fromStdString(layer));
    if (index < 0) return;
    layerBox_->setCurrentIndex(index);
    loadLayer();
    draw();
}

void DistributionsView::setGradients(bool gradients) {
    kindBox_->setCurrentIndex(gradients ? 1 : 0);
    loadLayer();
    draw();
}

void DistributionsView::markStep(int64_t step) {
    markedStep_ = step;
    // The ridgeline's step axis is vertical: the mark belongs to the other modes.
    const bool onPlot = step >= 0 && mode_ != Mode::Ridgeline;
    plotMarker_->setVisible(onPlot);
    stripMarker_->setVisible(step >= 0);
    for (QCPItemStraightLine* marker : {plotMarker_, stripMarker_}) {
        marker->point1->setCoords(double(step), 0);
        marker->point2->setCoords(double(step), 1);
    }
    if (isVisible()) {
        plot_->replot(QCustomPlot::rpQueuedReplot);
        stripPlot_->replot(QCustomPlot::rpQueuedReplot);
    }
}

void DistributionsView::setStripMetric(StripMetric metric) {
    stripMetric_ = metric;
    stripBox_->setCurrentIndex(stripBox_->findData(int(metric)));
    const bool zeros = metric == StripMetric::ZeroFraction;
    stripMap_->setGradient(zeros ? zerosGradient() : nonFiniteGradient());
    stripScale_->setGradient(zeros ? zerosGradient() : nonFiniteGradient());
    stripScale_->axis()->setLabel(zeros ? tr("zeros") : tr("NaN/Inf"));
    stripPlot_->xAxis->setLabel(zeros ? tr("step — share of exact zeros in each layer's output")
                                      : tr("step — NaN or infinite values in each layer's "
                                           "activations and gradients"));
    if (!shownRun_.store() || shownRun_.run() < 0) return;
    loadStrip();
    if (stack_->currentWidget() == plotPage_) drawStrip();
}

void DistributionsView::setMode(Mode mode) {
    mode_ = mode;
    modeBox_->setCurrentIndex(modeBox_->findData(int(mode)));
    draw();
}

std::vector<std::string> DistributionsView::layers() const {
    std::vector<std::string> names;
    for (const auto& layer : layers_)
        names.push_back(layer.name);
    return names;
}

std::string DistributionsView::layer() const {
    return layerBox_->currentData().toString().toStdString();
}

double DistributionsView::stripValue(size_t layer, size_t step) const {
    return strip_.at(layer * stripSteps_.size() + step);
}

QString DistributionsView::message() const {
    return stack_->currentWidget() == message_ ? message_->text() : QString();
}

QString DistributionsView::nonFiniteText() const {
    return nonFinite_->text();
}

void DistributionsView::showMessage(const QString& text) {
    message_->setText(text);
    stack_->setCurrentWidget(message_);
}

void DistributionsView::reload() {
    if (!shownRun_.store() || shownRun_.run() < 0) return;
    const std::string keep = layer();
    try {
        layers_ = train::layers_with_histograms(*shownRun_.store(), shownRun_.run());
        changes_ = recordedChanges(*shownRun_.store(), shownRun_.run());
    } catch (const Error& e) {
        showMessage(tr("Cannot read run %1: %2")
                        .arg(shownRun_.run())
                        .arg(QString::fromStdString(e.what())));
        return;
    }
    {
        const QSignalBlocker blocker(layerBox_);
        layerBox_->clear();
        for (const auto& l : layers_)
            layerBox_->addItem(
                QString::fromStdString(l.kind.empty() ? l.name : l.name + " (" + l.kind + ")"),
                QString::fromStdString(l.name));
        const int index = layerBox_->findData(QString::fromStdString(keep));
        layerBox_->setCurrentIndex(index >= 0 ? index : 0);
    }
    if (layers_.empty()) {
        showMessage(shownRun_.live()
                        ? tr("Run #%1 has captured no histograms yet: they come every "
                             "Training > Capture > summaries steps (100 by default).")
                              .arg(shownRun_.run())
                        : tr("Run #%1 captured no activation or gradient histograms "
                             "(Training > Capture > summaries was off, or the run ended before "
                             "the first capture step).")
                              .arg(shownRun_.run()));
        stateLabel_->clear();
        return;
    }
    loadLayer();
    loadStrip();
    draw();
}

void DistributionsView::loadLayer() {
    steps_.clear();
    columns_.clear();
    percentiles_.clear();
    if (!shownRun_.store() || shownRun_.run() < 0 || layerBox_->count() == 0) return;
    const bool gradients = kindBox_->currentData().toBool();
    const std::string key = std::string(gradients ? "gradient/" : "activation/") + layer();
    std::vector<store::HistogramSample> series;
    try {
        series = shownRun_.store()->histogram_series(shownRun_.run(), key);
    } catch (const Error& e) {
        showMessage(tr("Cannot read run %1: %2")
                        .arg(shownRun_.run())
                        .arg(QString::fromStdString(e.what())));
        return;
    }
    // One common range, so the steps' columns are comparable.
    low_ = std::numeric_limits<double>::infinity();
    high_ = -low_;
    for (const auto& h : series)
        if (std::isfinite(h.min) && std::isfinite(h.max)) {
            low_ = std::min(low_, h.min);
            high_ = std::max(high_, h.max);
        }
    if (!(high_ > low_)) {
        low_ = std::isfinite(low_) ? low_ - 0.5 : 0;
        high_ = low_ + 1;
    }
    for (const auto& h : series) {
        std::vector<double> column = train::rebin_histogram(h, low_, high_, kValueBins);
        double total = 0;
        for (double c : column)
            total += c;
        for (double& c : column)
            c = total > 0 ? c / total : 0;
        steps_.push_back(h.step);
        columns_.push_back(std::move(column));
        percentiles_.push_back(train::histogram_quantiles(h, kQuantiles));
    }
}

void DistributionsView::loadStrip() {
    stripLayers_.clear();
    stripSteps_.clear();
    strip_.clear();
    QStringList nonFinite;
    try {
        std::map<int64_t, size_t> column;
        std::vector<std::vector<store::MetricSample>> rows;
        for (const auto& l : train::recorded_layers(*shownRun_.store(), shownRun_.run())) {
            std::vector<store::MetricSample> series;
            if (stripMetric_ == StripMetric::ZeroFraction) {
                series = shownRun_.store()->metric_series(
                    shownRun_.run(), train::layer_metric_key(lm::kActivationZeros, l.name));
            } else {
                // Activation and gradient counts of a step, added.
                std::map<int64_t, double> counts;
                for (auto family : {lm::kActivationNonFinite, lm::kGradientNonFinite})
                    for (const auto& point : shownRun_.store()->metric_series(
                             shownRun_.run(), train::layer_metric_key(family, l.name)))
                        counts[point.step] += point.value;
                for (const auto& [step, count] : counts) {
                    store::MetricSample sample;
                    sample.step = step;
                    sample.value = count;
                    series.push_back(sample);
                }
            }
            if (series.empty()) continue;
            for (const auto& point : series)
                column.emplace(point.step, 0);
            stripLayers_.push_back(l.name);
            rows.push_back(std::move(series));
            double bad = 0;
            for (auto family : {lm::kActivationNonFinite, lm::kGradientNonFinite})
                for (const auto& point : shownRun_.store()->metric_series(
                         shownRun_.run(), train::layer_metric_key(family, l.name)))
                    bad = std::max(bad, point.value);
            if (bad > 0)
                nonFinite
                    << tr("%1 (up to %2 values)").arg(QString::fromStdString(l.name)).arg(bad);
        }
        for (auto& [step, index] : column) {
            index = stripSteps_.size();
            stripSteps_.push_back(step);
        }
        strip_.assign(stripLayers_.size() * stripSteps_.size(), std::nan(""));
        for (size_t r = 0; r < rows.size(); ++r)
            for (const auto& point : rows[r])
                strip_[r * stripSteps_.size() + column.at(point.step)] = point.value;
    } catch (const Error& e) {
        showMessage(tr("Cannot read run %1: %2")
                        .arg(shownRun_.run())
                        .arg(QString::fromStdString(e.what())));
        return;
    }
    nonFinite_->setText(nonFinite.isEmpty()
                            ? tr("No NaN or infinite values in any captured activation or "
                                 "gradient.")
                            : tr("NaN or infinite values captured in: %1")
                                  .arg(nonFinite.join(QStringLiteral(", "))));
    setStyleProperty(nonFinite_, "problem", !nonFinite.isEmpty());
}

void DistributionsView::draw() {
    if (steps_.empty()) {
        if (!layers_.empty())
            showMessage(tr("Layer %1 has no %2 histograms in run #%3.")
                            .arg(QString::fromStdString(layer()), kindBox_->currentData().toBool()
                                                                      ? tr("gradient")
                                                                      : tr("activation"))
                            .arg(shownRun_.run()));
        return;
    }
    stack_->setCurrentWidget(plotPage_);
    plot_->clearGraphs();
    ridges_.clear();
    plot_->yAxis->setRangeReversed(false);
    plot_->xAxis->setLabel(tr("step"));
    if (mode_ == Mode::Ridgeline) {
        plotChanges_->clear(); // its steps run down the y axis
        drawRidgeline();
        return;
    }
    plotChanges_->set(changes_, colors::kWarning);
    const double first = double(steps_.front()), last = double(steps_.back());
    const double half = steps_.size() > 1 ? (last - first) / double(steps_.size() - 1) / 2 : 0.5;
    if (mode_ == Mode::Heatmap) {
        heatmap_->setVisible(true);
        heatmap_->data()->setSize(int(steps_.size()), kValueBins);
        heatmap_->data()->setRange(QCPRange(first, std::max(last, first + 1)),
                                   QCPRange(low_ + (high_ - low_) / kValueBins / 2,
                                            high_ - (high_ - low_) / kValueBins / 2));
        double top = 0;
        for (size_t i = 0; i < columns_.size(); ++i)
            for (int b = 0; b < kValueBins; ++b) {
                heatmap_->data()->setCell(int(i), b, columns_[i][size_t(b)]);
                top = std::max(top, columns_[i][size_t(b)]);
            }
        heatmap_->setDataRange(QCPRange(0, std::max(top, 1e-9)));
        plot_->yAxis->setLabel(
            (kindBox_->currentData().toBool() ? tr("gradient value") : tr("activation value")));
        plot_->setToolTip(tr("Each column is one captured step; the darker a cell, the larger "
                             "the share of that step's values in its value range"));
    } else {
        heatmap_->setVisible(false);
        // Bands: 5-95 light, 25-75 darker, the median as a line.
        QVector<double> keys;
        std::vector<QVector<double>> q(kQuantiles.size());
        for (size_t i = 0; i < steps_.size(); ++i) {
            keys << double(steps_[i]);
            for (size_t k = 0; k < kQuantiles.size(); ++k)
                q[k] << percentiles_[i][k];
        }
        const auto band = [&](size_t lowIndex, size_t highIndex, int alpha) {
            QCPGraph* lower = plot_->addGraph();
            lower->setData(keys, q[lowIndex], true);
            lower->setPen(Qt::NoPen);
            QCPGraph* upper = plot_->addGraph();
            upper->setData(keys, q[highIndex], true);
            upper->setPen(Qt::NoPen);
            QColor fill = colors::kAccent;
            fill.setAlpha(alpha);
            upper->setBrush(fill);
            upper->setChannelFillGraph(lower);
        };
        band(0, 4, 45);
        band(1, 3, 90);
        QCPGraph* median = plot_->addGraph();
        median->setData(keys, q[2], true);
        median->setPen(QPen(colors::kAccent.darker(130), 1.6));
        plot_->yAxis->setLabel(
            (kindBox_->currentData().toBool() ? tr("gradient value") : tr("activation value")));
        plot_->setToolTip(tr("The median (line), the 25–75 and the 5–95 percentile bands of "
                             "each captured step"));
    }
    plot_->xAxis->setRange(first - half, last + half);
    plot_->yAxis->setRange(low_, high_);
    plot_->replot(QCustomPlot::rpQueuedReplot);
    drawStrip();
}

void DistributionsView::drawRidgeline() {
    heatmap_->setVisible(false);
    // Evenly spread captured steps, oldest first: drawn first, so newer curves cover them.
    const size_t n = steps_.size(), shown = std::min(n, kMaxRidges);
    for (size_t k = 0; k < shown; ++k) {
        const size_t i = shown > 1 ? k * (n - 1) / (shown - 1) : n - 1;
        if (ridges_.empty() || ridges_.back() != i) ridges_.push_back(i);
    }
    double top = 0;
    for (size_t i : ridges_)
        for (double share : columns_[i])
            top = std::max(top, share);
    // y is the step, reversed so older steps sit higher (further back); a curve rises from its
    // step's baseline by up to 1.8 spacings, so neighbours overlap as in a ridgeline.
    const double spacing =
        ridges_.size() > 1
            ? double(steps_[ridges_.back()] - steps_[ridges_.front()]) / double(ridges_.size() - 1)
            : 1.0;
    const double height = 1.8 * spacing / std::max(top, 1e-12);
    const double width = (high_ - low_) / kValueBins;
    QVector<double> values;
    for (int b = 0; b < kValueBins; ++b)
        values << low_ + (b + 0.5) * width;
    for (size_t i : ridges_) {
        const double base = double(steps_[i]);
        QVector<double> baseline(kValueBins, base), curve;
        for (int b = 0; b < kValueBins; ++b)
            curve << base - columns_[i][size_t(b)] * height;
        QCPGraph* floor = plot_->addGraph();
        floor->setData(values, baseline, true);
        floor->setPen(Qt::NoPen);
        QCPGraph* ridge = plot_->addGraph();
        ridge->setData(values, curve, true);
        ridge->setPen(QPen(colors::kAccent.darker(120), 1.2));
        ridge->setBrush(colors::kSurface); // opaque: it hides the older curves behind it
        ridge->setChannelFillGraph(floor);
    }
    plot_->xAxis->setLabel(
        (kindBox_->currentData().toBool() ? tr("gradient value") : tr("activation value")));
    plot_->yAxis->setLabel(tr("step"));
    plot_->yAxis->setRangeReversed(true);
    plot_->xAxis->setRange(low_, high_);
    const double oldest = double(steps_[ridges_.front()]), newest = double(steps_[ridges_.back()]);
    plot_->yAxis->setRange(oldest - 2.0 * spacing, newest + 0.5 * spacing);
    plot_->setToolTip(tr("One curve per captured step (%1 of %2 shown), older steps further "
                         "back; a curve's height is the share of that step's values in each "
                         "value range")
                          .arg(ridges_.size())
                          .arg(steps_.size()));
    plot_->replot(QCustomPlot::rpQueuedReplot);
    drawStrip();
}

void DistributionsView::drawStrip() {
    markStep(markedStep_);
    stripChanges_->set(changes_, colors::kWarning);
    // The strip: one row per layer with zero fractions.
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    for (size_t r = 0; r < stripLayers_.size(); ++r)
        ticker->addTick(double(r), QString::fromStdString(stripLayers_[r]));
    stripPlot_->yAxis->setTicker(ticker);
    double stripTop = 1; // zero fractions: 0..1; counts: 0..the largest count
    if (stripMetric_ == StripMetric::NonFinite)
        for (double v : strip_)
            if (std::isfinite(v)) stripTop = std::max(stripTop, v);
    stripMap_->setDataRange(QCPRange(0, stripTop));
    if (!stripSteps_.empty()) {
        const double sFirst = double(stripSteps_.front()), sLast = double(stripSteps_.back());
        stripMap_->data()->setSize(int(stripSteps_.size()), int(stripLayers_.size()));
        stripMap_->data()->setRange(
            QCPRange(sFirst, std::max(sLast, sFirst + 1)),
            QCPRange(0, std::max<double>(1, double(stripLayers_.size()) - 1)));
        for (size_t r = 0; r < stripLayers_.size(); ++r)
            for (size_t c = 0; c < stripSteps_.size(); ++c)
                stripMap_->data()->setCell(int(c), int(r), stripValue(r, c));
        const double sHalf =
            stripSteps_.size() > 1 ? (sLast - sFirst) / double(stripSteps_.size() - 1) / 2 : 0.5;
        stripPlot_->xAxis->setRange(sFirst - sHalf, sLast + sHalf);
        stripPlot_->yAxis->setRange(-0.5, double(stripLayers_.size()) - 0.5);
    }
    stripPlot_->replot(QCustomPlot::rpQueuedReplot);
    // The strip's metric can change while the layer has no histograms (the message shows then):
    // no steps to name (an ASan finding of the random-input test, seed 777).
    if (steps_.empty()) return;
    stateLabel_->setText(tr("%n captured step(s), %1 to %2", nullptr, int(steps_.size()))
                             .arg(steps_.front())
                             .arg(steps_.back()) +
                         (shownRun_.live() ? tr(" · live") : QString()));
}

} // namespace myelin::ui
