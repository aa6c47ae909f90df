#include "inspect/time_gradients_view.h"

#include "inspect/view_frame.h"
#include "widgets/theme.h"

#include <myelin/error.h>
#include <myelin/graph/registry.h>
#include <myelin/train/layer_inspection.h>

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

namespace myelin::ui {

namespace {

constexpr size_t kMaxShrinkageSteps = 200; // evenly spread over a longer run

bool isRecurrentKind(const std::string& kind) {
    const graph::LayerKind* k = graph::find_layer_kind(kind);
    return k && k->recurrent;
}

// Smallest over largest of the norms above zero (steps padded in every probe example read 0);
// NaN when there are none.
double shrinkageOf(const std::vector<double>& norms) {
    double low = std::numeric_limits<double>::infinity(), high = 0;
    for (double v : norms)
        if (v > 0 && std::isfinite(v)) {
            low = std::min(low, v);
            high = std::max(high, v);
        }
    return high > 0 ? low / high : std::numeric_limits<double>::quiet_NaN();
}

QString seriesKey(const store::TimeGradientSeries& s) {
    return QStringLiteral("%1/%2").arg(s.stack_layer).arg(s.direction);
}

} // namespace

QString TimeGradientsView::seriesName(const store::TimeGradientSeries& series, bool stacked,
                                      bool bidirectional) {
    const QString direction = series.direction == 0 ? tr("forward") : tr("reverse");
    if (stacked && bidirectional) return tr("layer %1 %2").arg(series.stack_layer).arg(direction);
    if (stacked) return tr("layer %1").arg(series.stack_layer);
    return bidirectional ? direction : tr("dL/dh_t");
}

TimeGradientsView::TimeGradientsView(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("timeGradientsView"));
    layerBox_ = new QComboBox(this);
    layerBox_->setObjectName(QStringLiteral("timeGradientsLayer"));
    layerBox_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    logBox_ = new QCheckBox(tr("Log scale"), this);
    logBox_->setObjectName(QStringLiteral("timeGradientsLog"));
    logBox_->setChecked(true);
    logBox_->setToolTip(tr("A logarithmic norm axis: vanishing gradients shrink by a factor "
                           "per step, a straight falling line"));
    stateLabel_ = new QLabel(this);
    stateLabel_->setObjectName(QStringLiteral("timeGradientsState"));
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Layer"), this));
    top->addWidget(layerBox_);
    top->addSpacing(12);
    top->addWidget(logBox_);
    top->addSpacing(12);
    top->addWidget(stateLabel_, 1);

    plot_ = new QCustomPlot(this);
    plot_->setObjectName(QStringLiteral("timeGradientsPlot"));
    stylePlot(plot_, {plot_->xAxis, plot_->yAxis});
    plot_->xAxis->setLabel(tr("time step t"));
    plot_->yAxis->setLabel(tr("‖dL/dh_t‖ on the probe examples"));
    // Whole time steps on the x axis; no zero line (t = 0 is a step like the others).
    auto steps = QSharedPointer<QCPAxisTickerFixed>::create();
    steps->setTickStep(1);
    steps->setScaleStrategy(QCPAxisTickerFixed::ssMultiples);
    plot_->xAxis->setTicker(steps);
    plot_->xAxis->grid()->setZeroLinePen(Qt::NoPen);
    // The legend in a row of its own above the plot, so it never covers a curve.
    plot_->legend->setVisible(true);
    plot_->legend->setBrush(Qt::NoBrush);
    plot_->legend->setBorderPen(Qt::NoPen);
    plot_->legend->setTextColor(colors::kText);
    plot_->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    plot_->plotLayout()->insertRow(0);
    plot_->plotLayout()->addElement(0, 0, plot_->legend);
    plot_->plotLayout()->setRowStretchFactor(0, 0.001);

    shrinkPlot_ = new QCustomPlot(this);
    shrinkPlot_->setObjectName(QStringLiteral("timeGradientsShrinkage"));
    stylePlot(shrinkPlot_, {shrinkPlot_->xAxis, shrinkPlot_->yAxis});
    shrinkPlot_->xAxis->grid()->setZeroLinePen(Qt::NoPen);
    shrinkPlot_->xAxis->setLabel(tr("training step — smallest over largest per-step norm"));
    shrinkPlot_->yAxis->setLabel(tr("min / max over t"));
    shrinkPlot_->yAxis->setScaleType(QCPAxis::stLogarithmic);
    shrinkPlot_->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
    marker_ = new QCPItemStraightLine(shrinkPlot_);
    marker_->setPen(QPen(colors::kAccent, 1, Qt::DashLine));
    marker_->setVisible(false);

    stepSlider_ = new QSlider(Qt::Horizontal, this);
    stepSlider_->setObjectName(QStringLiteral("timeGradientsStep"));
    stepLabel_ = new QLabel(this);
    stepLabel_->setObjectName(QStringLiteral("timeGradientsStepLabel"));
    stepLabel_->setMinimumWidth(150);
    followNewest_ = new QCheckBox(tr("Follow newest"), this);
    followNewest_->setObjectName(QStringLiteral("timeGradientsFollow"));
    auto* below = new QHBoxLayout;
    below->setContentsMargins(0, 4, 0, 0);
    below->addWidget(new QLabel(tr("Step"), this));
    below->addWidget(stepSlider_, 1);
    below->addWidget(stepLabel_);
    below->addWidget(followNewest_);
    const ViewFrame frame =
        makeViewFrame(this, top, plot_, shrinkPlot_, below, QStringLiteral("timeGradientsMessage"));
    stack_ = frame.stack;
    message_ = frame.message;
    plotPage_ = frame.plots;

    shownRun_.setPoll([this] {
        if (isVisible())
            reload();
        else if (!available_)
            refreshAvailability(); // the shell shows the tab once the run has a recurrent layer
    });
    connect(layerBox_, &QComboBox::activated, this, [this] { loadLayer(); });
    connect(logBox_, &QCheckBox::toggled, this, [this](bool on) { setLogScale(on); });
    connect(stepSlider_, &QSlider::valueChanged, this, [this](int index) {
        if (index < 0 || size_t(index) >= steps_.size()) return;
        followNewest_->setChecked(false);
        loadStep(steps_[size_t(index)]);
    });
    connect(followNewest_, &QCheckBox::toggled, this, [this](bool on) {
        if (on && !steps_.empty()) loadStep(steps_.back());
    });
    showMessage(tr("No run to show yet. For a model with recurrent layers (RNN, LSTM, GRU), the "
                   "gradient reaching each time step's hidden state appears here once a run "
                   "has captured it."));
}

TimeGradientsView::~TimeGradientsView() = default;

bool TimeGradientsView::openStore(const QString& path) {
    QString error;
    const bool open = shownRun_.open(path, &error);
    if (!error.isEmpty()) showMessage(tr("Cannot read the run store: %1").arg(error));
    return open;
}

void TimeGradientsView::showRun(const QString& storePath, int64_t run, bool live) {
    if (!openStore(storePath)) {
        setAvailable(false);
        return;
    }
    // A run the user has not looked at yet, or one that has just turned live (the studio shows a
    // new run once before its training reports in), follows its newest capture.
    const bool followNow = run != shownRun_.run() || (live && !shownRun_.live());
    shownRun_.show(run, live);
    if (followNow) followNewest_->setChecked(live);
    reload();
}

void TimeGradientsView::runFinished() {
    if (!shownRun_.finish()) return;
    reload();
}

void TimeGradientsView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (shownRun_.live()) reload();
    plot_->replot();
    shrinkPlot_->replot();
}

void TimeGradientsView::setLayer(const std::string& layer) {
    const int index = layerBox_->findData(QString::fromStdString(layer));
    if (index < 0) return;
    layerBox_->setCurrentIndex(index);
    loadLayer();
}

void TimeGradientsView::selectStep(int64_t step) {
    if (steps_.empty()) return;
    followNewest_->setChecked(false);
    loadStep(step);
}

void TimeGradientsView::setFollowNewest(bool follow) {
    followNewest_->setChecked(follow);
}

void TimeGradientsView::setLogScale(bool log) {
    if (logBox_->isChecked() != log) {
        logBox_->setChecked(log); // toggled() comes back here
        return;
    }
    draw();
}

bool TimeGradientsView::logScale() const {
    return logBox_->isChecked();
}

std::vector<std::string> TimeGradientsView::layers() const {
    return layers_;
}

std::string TimeGradientsView::layer() const {
    return layerBox_->currentData().toString().toStdString();
}

std::optional<int64_t> TimeGradientsView::shownStep() const {
    if (shown_.empty()) return std::nullopt;
    return shown_.front().step;
}

QString TimeGradientsView::message() const {
    return stack_->currentWidget() == message_ ? message_->text() : QString();
}

void TimeGradientsView::showMessage(const QString& text) {
    message_->setText(text);
    stack_->setCurrentWidget(message_);
}

void TimeGradientsView::setAvailable(bool available) {
    if (available == available_) return;
    available_ = available;
    emit availabilityChanged(available);
}

void TimeGradientsView::refreshAvailability() {
    if (!shownRun_.store() || shownRun_.run() < 0) return;
    try {
        bool recurrent = !shownRun_.store()->time_gradient_layers(shownRun_.run()).empty();
        for (const auto& l : train::recorded_layers(*shownRun_.store(), shownRun_.run()))
            recurrent = recurrent || isRecurrentKind(l.kind);
        setAvailable(recurrent);
    } catch (const Error&) {
        // reload() says what is wrong once the view is shown
    }
}

void TimeGradientsView::reload() {
    if (!shownRun_.store() || shownRun_.run() < 0) return;
    const std::string keep = layer();
    bool recurrent = false;
    std::vector<train::RecordedLayer> recorded;
    try {
        layers_ = shownRun_.store()->time_gradient_layers(shownRun_.run());
        recorded = train::recorded_layers(*shownRun_.store(), shownRun_.run());
        recurrent = !layers_.empty();
        for (const auto& l : recorded)
            recurrent = recurrent || isRecurrentKind(l.kind);
    } catch (const Error& e) {
        showMessage(tr("Cannot read run %1: %2")
                        .arg(shownRun_.run())
                        .arg(QString::fromStdString(e.what())));
        return;
    }
    setAvailable(recurrent);
    {
        const QSignalBlocker blocker(layerBox_);
        layerBox_->clear();
        for (const auto& name : layers_) {
            // "2 (LSTM)": the module name with its node's kind, as the other views show it.
            auto at = std::find_if(recorded.begin(), recorded.end(),
                                   [&](const auto& l) { return l.name == name; });
            const bool kind = at != recorded.end() && !at->kind.empty();
            layerBox_->addItem(QString::fromStdString(kind ? name + " (" + at->kind + ")" : name),
                               QString::fromStdString(name));
        }
        const int index = layerBox_->findData(QString::fromStdString(keep));
        layerBox_->setCurrentIndex(index >= 0 ? index : 0);
    }
    if (layers_.empty()) {
        steps_.clear();
        shown_.clear();
        stateLabel_->clear();
        updateStepControls();
        showMessage(
            shownRun_.live()
                ? tr("Run #%1 has recorded no gradient through time yet: it is captured on the "
                     "probe examples every Training > Capture > feature maps steps.")
                      .arg(shownRun_.run())
                : tr("Run #%1 recorded no gradient through time (Training > Capture > feature "
                     "maps was off, the model has no recurrent layer, or the run ended before "
                     "the first capture step).")
                      .arg(shownRun_.run()));
        return;
    }
    loadLayer();
}

void TimeGradientsView::loadLayer() {
    const std::string name = layer();
    const std::optional<int64_t> wanted = shownStep();
    try {
        steps_ = shownRun_.store()->time_gradient_steps(shownRun_.run(), name);
        // The shrinkage over (at most kMaxShrinkageSteps of) the recorded steps.
        shrinkNames_.clear();
        shrinkage_.clear();
        std::vector<int64_t> sampled;
        const size_t n = steps_.size();
        for (size_t i = 0; i < std::min(n, kMaxShrinkageSteps); ++i)
            sampled.push_back(
                steps_[n <= kMaxShrinkageSteps ? i : i * (n - 1) / (kMaxShrinkageSteps - 1)]);
        std::vector<std::vector<double>> rows;
        for (int64_t step : sampled)
            for (const auto& s : shownRun_.store()->time_gradients(shownRun_.run(), name, step)) {
                const auto key = seriesKey(s).toStdString();
                auto at = std::find(shrinkNames_.begin(), shrinkNames_.end(), key);
                if (at == shrinkNames_.end()) {
                    shrinkNames_.push_back(key);
                    shrinkage_.emplace_back();
                    rows.emplace_back();
                    at = shrinkNames_.end() - 1;
                }
                const size_t k = size_t(at - shrinkNames_.begin());
                shrinkage_[k].push_back(shrinkageOf(s.norms));
                rows[k].push_back(double(step));
            }
        shrinkPlot_->clearGraphs();
        for (size_t k = 0; k < shrinkage_.size(); ++k) {
            QCPGraph* g = shrinkPlot_->addGraph();
            g->setPen(QPen(runColor(int(k)), 1.6));
            g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 4));
            g->setData(QVector<double>(rows[k].begin(), rows[k].end()),
                       QVector<double>(shrinkage_[k].begin(), shrinkage_[k].end()));
        }
    } catch (const Error& e) {
        showMessage(tr("Cannot read run %1: %2")
                        .arg(shownRun_.run())
                        .arg(QString::fromStdString(e.what())));
        return;
    }
    if (steps_.empty()) return;
    const bool follow = followNewest_->isChecked() || !wanted;
    loadStep(follow ? steps_.back() : *wanted);
}

void TimeGradientsView::loadStep(int64_t step) {
    if (!shownRun_.store() || shownRun_.run() < 0) return;
    try {
        shown_ = shownRun_.store()->time_gradients(shownRun_.run(), layer(), step);
    } catch (const Error& e) {
        showMessage(tr("Cannot read run %1: %2")
                        .arg(shownRun_.run())
                        .arg(QString::fromStdString(e.what())));
        return;
    }
    updateStepControls();
    draw();
}

void TimeGradientsView::updateStepControls() {
    const QSignalBlocker blocker(stepSlider_);
    stepSlider_->setRange(0, std::max(0, int(steps_.size()) - 1));
    const auto step = shownStep();
    const auto at = step ? std::find(steps_.begin(), steps_.end(), *step) : steps_.end();
    if (at != steps_.end()) stepSlider_->setValue(int(at - steps_.begin()));
    stepLabel_->setText(
        step ? tr("step %1 (%2 of %3)").arg(*step).arg(at - steps_.begin() + 1).arg(steps_.size())
             : QString());
    if (steps_.empty()) return;
    const QString captures =
        steps_.size() == 1 ? tr("1 capture") : tr("%1 captures").arg(steps_.size());
    stateLabel_->setText(
        shownRun_.live()
            ? tr("● live: %1, newest step %2").arg(captures).arg(steps_.back())
            : tr("%1, steps %2 to %3").arg(captures).arg(steps_.front()).arg(steps_.back()));
}

void TimeGradientsView::draw() {
    if (shown_.empty()) return;
    stack_->setCurrentWidget(plotPage_);
    bool stacked = false, bidirectional = false;
    for (const auto& s : shown_) {
        stacked = stacked || s.stack_layer > 0;
        bidirectional = bidirectional || s.direction > 0;
    }
    const bool log = logScale();
    plot_->clearGraphs();
    double low = std::numeric_limits<double>::infinity(), high = 0;
    size_t steps = 0; // up to the last step some probe example reaches
    for (size_t k = 0; k < shown_.size(); ++k) {
        const auto& s = shown_[k];
        QCPGraph* g = plot_->addGraph();
        g->setName(seriesName(s, stacked, bidirectional));
        g->setPen(QPen(runColor(int(k)), 1.8));
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 4));
        QVector<double> ts, values;
        for (size_t t = 0; t < s.norms.size(); ++t) {
            const double v = s.norms[t];
            // A zero (a step padded in every probe example) has no place on a log axis.
            if (!std::isfinite(v) || (log && v <= 0)) continue;
            ts.push_back(double(t));
            values.push_back(v);
            if (v > 0) {
                low = std::min(low, v);
                steps = std::max(steps, t + 1);
            }
            high = std::max(high, v);
        }
        g->setData(ts, values);
    }
    plot_->xAxis->setRange(-0.5, std::max<double>(1, double(steps) - 0.5));
    if (log) {
        plot_->yAxis->setScaleType(QCPAxis::stLogarithmic);
        plot_->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>::create());
        if (high > 0) plot_->yAxis->setRange(low / 1.5, high * 1.5);
        setLogTicks(plot_->yAxis);
    } else {
        plot_->yAxis->setScaleType(QCPAxis::stLinear);
        plot_->yAxis->setTicker(QSharedPointer<QCPAxisTicker>::create());
        plot_->yAxis->setRange(0, high > 0 ? high * 1.08 : 1);
    }
    plot_->replot();
    drawShrinkage();
}

void TimeGradientsView::drawShrinkage() {
    double low = std::numeric_limits<double>::infinity(), high = 0;
    for (const auto& row : shrinkage_)
        for (double v : row)
            if (v > 0 && std::isfinite(v)) {
                low = std::min(low, v);
                high = std::max(high, v);
            }
    if (high > 0) {
        // At least a decade, so a flat line does not fill the plot with one tick.
        const double mid = std::sqrt(low * high);
        const double span = std::max(high / low, 10.0);
        shrinkPlot_->yAxis->setRange(mid / std::sqrt(span) / 1.3, mid * std::sqrt(span) * 1.3);
        setLogTicks(shrinkPlot_->yAxis);
    }
    if (!steps_.empty()) {
        const double first = double(steps_.front()), last = double(steps_.back());
        const double pad = std::max(1.0, (last - first) * 0.04);
        shrinkPlot_->xAxis->setRange(first - pad, last + pad);
    }
    const auto step = shownStep();
    marker_->setVisible(bool(step));
    if (step) {
        marker_->point1->setCoords(double(*step), 0);
        marker_->point2->setCoords(double(*step), 1);
    }
    shrinkPlot_->replot();
}

} // namespace myelin::ui
