#include "training/training_dock.h"

#include "training/training_controller.h"
#include "widgets/theme.h"

#include <myelin/device.h>
#include <myelin/spec/components.h>

#include <qcustomplot.h>

#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QPlainTextEdit>
#include <QTime>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace myelin::ui {

namespace {

// Before the first point: epoch / step 0 to 1 and values 0 to 1 (QCustomPlot's default 0 to 5
// reads as data that is not there).
void emptyRanges(QCustomPlot* plot) {
    plot->xAxis->setRange(0, 1);
    plot->yAxis->setRange(0, 1);
}

QCustomPlot* makePlot(const QString& title, const QString& yLabel, QWidget* parent) {
    auto* plot = new QCustomPlot(parent);
    plot->setMinimumSize(240, 200);
    stylePlot(plot, {plot->xAxis, plot->yAxis});
    // Each curve one polyline, not a stroke per segment: the live frames of a long run are the
    // GUI thread's largest cost while the training threads want every core.
    plot->setPlottingHint(QCP::phFastPolylines, true);
    plot->plotLayout()->insertRow(0);
    auto* heading = new QCPTextElement(plot, title, QFont(plot->font().family(), 9, QFont::Bold));
    heading->setTextColor(colors::kText);
    plot->plotLayout()->addElement(0, 0, heading);
    for (QCPAxis* axis : {plot->xAxis, plot->yAxis})
        axis->setTickLabelFont(QFont(plot->font().family(), 7));
    plot->yAxis->setLabel(yLabel);
    // Few ticks: the plots are small and step numbers get long.
    plot->xAxis->ticker()->setTickCount(4);
    plot->yAxis->ticker()->setTickCount(4);
    plot->legend->setVisible(true);
    plot->legend->setBrush(QBrush(colors::kLegendBackground));
    plot->legend->setBorderPen(QPen(colors::kBorder));
    plot->legend->setFont(QFont(plot->font().family(), 7));
    plot->legend->setIconSize(14, 8);
    plot->legend->setRowSpacing(-2);
    plot->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    emptyRanges(plot);
    return plot;
}

QCPGraph* addCurve(QCustomPlot* plot, const QString& name, const QColor& color, bool markers) {
    QCPGraph* graph = plot->addGraph();
    graph->setName(name);
    graph->setPen(QPen(color, markers ? 2.0 : 1.2));
    if (markers)
        graph->setScatterStyle(
            QCPScatterStyle(QCPScatterStyle::ssCircle, color, colors::kSurface, 6));
    return graph;
}

// Fits both axes to the data with a little margin; a flat curve (a constant learning rate) gets
// a band around its value instead of QCustomPlot's default range.
void fitAxes(QCustomPlot* plot) {
    bool foundKeys = false, foundValues = false;
    QCPRange keys, values;
    for (int i = 0; i < plot->graphCount(); ++i) {
        bool found = false;
        const QCPRange k = plot->graph(i)->getKeyRange(found);
        if (found)
            keys = foundKeys
                       ? QCPRange(std::min(keys.lower, k.lower), std::max(keys.upper, k.upper))
                       : k;
        foundKeys = foundKeys || found;
        const QCPRange v = plot->graph(i)->getValueRange(found);
        if (found)
            values = foundValues ? QCPRange(std::min(values.lower, v.lower),
                                            std::max(values.upper, v.upper))
                                 : v;
        foundValues = foundValues || found;
    }
    if (!foundKeys || !foundValues) return;
    const double pad =
        values.size() > 0 ? values.size() * 0.08 : std::max(std::abs(values.center()) * 0.1, 1e-6);
    plot->yAxis->setRange(values.lower - pad, values.upper + pad);
    plot->xAxis->setRange(keys.size() > 0 ? keys : QCPRange(keys.lower - 1, keys.upper + 1));
}

QString stateText(TrainingController::State state) {
    switch (state) {
    case TrainingController::State::Idle:
        return QObject::tr("Idle");
    case TrainingController::State::Running:
        return QObject::tr("Training");
    case TrainingController::State::Paused:
        return QObject::tr("Paused");
    case TrainingController::State::Stopping:
        return QObject::tr("Stopping…");
    }
    return {};
}

// The state label's "state" property, which the studio's sheet colours the label by.
QString stateName(TrainingController::State state) {
    switch (state) {
    case TrainingController::State::Running:
        return QStringLiteral("running");
    case TrainingController::State::Paused:
        return QStringLiteral("paused");
    case TrainingController::State::Stopping:
        return QStringLiteral("stopping");
    case TrainingController::State::Idle:
        break;
    }
    return QStringLiteral("idle");
}

} // namespace

QString formatDuration(double seconds) {
    if (!(seconds >= 0) || !std::isfinite(seconds)) return QStringLiteral("—");
    const qint64 s = qint64(std::llround(seconds));
    if (s < 60) return QObject::tr("%1 s").arg(s);
    const qint64 h = s / 3600, m = (s % 3600) / 60, sec = s % 60;
    if (h > 0)
        return QStringLiteral("%1:%2:%3")
            .arg(h)
            .arg(m, 2, 10, QLatin1Char('0'))
            .arg(sec, 2, 10, QLatin1Char('0'));
    return QStringLiteral("%1:%2").arg(m).arg(sec, 2, 10, QLatin1Char('0'));
}

QString progressText(const train::Progress& p) {
    QStringList parts;
    parts << QObject::tr("epoch %1/%2").arg(std::min(p.epoch + 1, p.epochs)).arg(p.epochs);
    // Both counts say what they count: the graph's scrubber counts the run's steps.
    if (p.steps_per_epoch > 0)
        parts << QObject::tr("step %1/%2 of the epoch").arg(p.step_in_epoch).arg(p.steps_per_epoch);
    if (p.total_steps > 0) parts << QObject::tr("%1/%2 in all").arg(p.step).arg(p.total_steps);
    return parts.join(QStringLiteral("  ·  "));
}

QString runPlaceText(const TrainingController& controller) {
    if (controller.runProcesses() <= 1) return deviceMemoryText();
    return QObject::tr("CPU  ·  %1 processes (mpirun)").arg(controller.runProcesses());
}

QString deviceMemoryText(bool peakOnly) {
    const MemoryStats stats = memory_stats(DeviceType::CPU);
    // The allocator counts blocks of 64 KiB and up (MemoryStats, device.h); a model whose
    // tensors are all smaller has nothing counted, and "0 bytes" would be wrong.
    constexpr int64_t kCountedFrom = int64_t(64) << 10;
    if (stats.peak_allocated_bytes == 0)
        return QObject::tr("CPU  ·  tensors < %1")
            .arg(QLocale().formattedDataSize(kCountedFrom, 0));
    const QLocale locale;
    const QString peak = locale.formattedDataSize(stats.peak_allocated_bytes, 0);
    if (peakOnly) return QObject::tr("CPU  ·  peak %1").arg(peak);
    return QObject::tr("CPU  ·  tensors %1  ·  peak %2")
        .arg(locale.formattedDataSize(stats.allocated_bytes, 0), peak);
}

TrainingDock::TrainingDock(TrainingController* controller, QWidget* parent)
    : QWidget(parent), controller_(controller) {
    setObjectName(QStringLiteral("trainingDock"));
    setAttribute(Qt::WA_StyledBackground, true);

    stateLabel_ = new QLabel(this);
    stateLabel_->setObjectName(QStringLiteral("trainingState"));
    runLabel_ = new QLabel(tr("No run yet — press Train (F5) to start one."), this);
    runLabel_->setObjectName(QStringLiteral("trainingRun"));
    statsLabel_ = new QLabel(this);
    statsLabel_->setObjectName(QStringLiteral("trainingStats"));
    deviceLabel_ = new QLabel(this);
    deviceLabel_->setObjectName(QStringLiteral("trainingDevice"));
    deviceLabel_->setToolTip(
        tr("The device this run computes on, the memory its tensors hold now "
           "and the most they held since the run started (blocks of 64 KiB and "
           "more, which hold nearly all of a model's memory)"));
    auto* header = new QHBoxLayout;
    header->setSpacing(10);
    header->addWidget(stateLabel_);
    header->addWidget(runLabel_);
    header->addStretch(1);
    header->addWidget(statsLabel_);
    header->addWidget(deviceLabel_);

    lossPlot_ = makePlot(tr("Loss"), tr("loss"), this);
    lossPlot_->setObjectName(QStringLiteral("lossPlot"));
    lossPlot_->xAxis->setLabel(tr("step"));
    stepLoss_ = addCurve(lossPlot_, tr("train (step)"), colors::kTrainStepCurve, false);
    epochLoss_ = addCurve(lossPlot_, tr("train (epoch)"), colors::kTrainCurve, true);
    validationLoss_ = addCurve(lossPlot_, tr("validation"), colors::kValidationCurve, true);

    accuracyPlot_ = makePlot(tr("Accuracy"), tr("accuracy"), this);
    accuracyPlot_->setObjectName(QStringLiteral("accuracyPlot"));
    accuracyPlot_->xAxis->setLabel(tr("epoch"));
    trainScore_ = addCurve(accuracyPlot_, tr("train"), colors::kTrainCurve, true);
    validationScore_ = addCurve(accuracyPlot_, tr("validation"), colors::kValidationCurve, true);

    lrPlot_ = makePlot(tr("Learning rate"), tr("lr"), this);
    lrPlot_->setObjectName(QStringLiteral("lrPlot"));
    lrPlot_->xAxis->setLabel(tr("step"));
    lrPlot_->legend->setVisible(false);
    learningRate_ = addCurve(lrPlot_, tr("lr"), colors::kTrainCurve, false);
    for (QCustomPlot* plot : {lossPlot_, lrPlot_})
        changeMarks_.push_back(std::make_unique<ChangeMarks>(plot));

    log_ = new QPlainTextEdit(this);
    log_->setObjectName(QStringLiteral("trainingLog"));
    log_->setReadOnly(true);
    log_->setMaximumBlockCount(2000);
    log_->setMinimumWidth(200);
    log_->setMaximumWidth(320);
    log_->setPlaceholderText(tr("Checkpoints, warnings and errors of the run appear here."));

    auto* plots = new QHBoxLayout;
    plots->setSpacing(8);
    plots->addWidget(lossPlot_, 3);
    plots->addWidget(accuracyPlot_, 2);
    plots->addWidget(lrPlot_, 2);
    plots->addWidget(log_, 2);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(10, 8, 10, 8);
    layout->setSpacing(6);
    layout->addLayout(header);
    layout->addLayout(plots, 1);

    connect(controller_, &TrainingController::stateChanged, this, [this] { updateHeader(); });
    // A new run starts from clean plots.
    connect(controller_, &TrainingController::runCreated, this, [this] { clear(); });
    connect(controller_, &TrainingController::runStarted, this,
            [this](const train::RunStarted& started) {
                runName_ = QString::fromStdString(started.run_name);
                progress_.epochs = started.epochs;
                progress_.steps_per_epoch = started.steps_per_epoch;
                if (started.start_step > 0)
                    appendLog(tr("resumed at epoch %1, step %2")
                                  .arg(started.start_epoch + 1)
                                  .arg(started.start_step));
                updateHeader();
            });
    connect(controller_, &TrainingController::stepMetrics, this, &TrainingDock::onStep);
    connect(controller_, &TrainingController::epochMetrics, this, &TrainingDock::onEpoch);
    connect(controller_, &TrainingController::progressChanged, this, &TrainingDock::onProgress);
    connect(controller_, &TrainingController::checkpointSaved, this,
            [this](const train::CheckpointSaved& c) {
                appendLog(tr("checkpoint%1 at step %2: %3")
                              .arg(c.is_best ? tr(" (best)") : QString())
                              .arg(c.step)
                              .arg(QFileInfo(QString::fromStdString(c.path)).fileName()));
            });
    connect(controller_, &TrainingController::logMessage, this,
            [this](const QString& text, bool warning) {
                appendLog(text, warning ? colors::kWarning.name() : QString());
            });
    connect(controller_, &TrainingController::runError, this,
            [this](const QString& message, const QString& module) {
                appendLog(module.isEmpty() ? tr("error: %1").arg(message)
                                           : tr("error in %1: %2").arg(module, message),
                          colors::kError.name());
            });
    connect(controller_, &TrainingController::breakpointHit, this,
            [this](const train::BreakpointFired& b) {
                appendLog(tr("breakpoint %1 at step %2: %3")
                              .arg(QString::fromStdString(b.condition))
                              .arg(b.step)
                              .arg(QString::fromStdString(b.message)),
                          colors::kWarning.name());
            });
    // A change made while paused: said in the log and marked on the step plots.
    connect(controller_, &TrainingController::runChanged, this,
            [this](qint64 step, const QString& what) {
                appendLog(tr("changed after step %1: %2").arg(step).arg(what),
                          colors::kWarning.name());
                for (auto& marks : changeMarks_)
                    marks->add({step, what}, colors::kWarning);
                replot();
            });
    connect(controller_, &TrainingController::finished, this, [this](train::RunStatus status) {
        lastStatus_ = status;
        drawPlots(); // the last points now, not after the replot interval
        appendLog(tr("run %1").arg(QString::fromLatin1(train::run_status_name(status))),
                  status == train::RunStatus::Failed ? colors::kError.name() : colors::kOk.name());
        updateHeader();
    });
    updateHeader();
}

void TrainingDock::clear() {
    for (QCustomPlot* plot : {lossPlot_, accuracyPlot_, lrPlot_}) {
        for (int i = 0; i < plot->graphCount(); ++i)
            plot->graph(i)->data()->clear();
        emptyRanges(plot);
        plot->replot(QCustomPlot::rpQueuedReplot);
    }
    log_->clear();
    lastStatus_.reset();
    for (auto& marks : changeMarks_)
        marks->clear();
    runName_.clear();
    scoreMetric_.clear();
    progress_ = train::Progress{};
    updateHeader();
}

int TrainingDock::stepLossPoints() const {
    return stepLoss_->data()->size();
}
int TrainingDock::validationLossPoints() const {
    return validationLoss_->data()->size();
}

QString TrainingDock::headerText() const {
    return runLabel_->text() + QLatin1Char(' ') + statsLabel_->text();
}

double TrainingDock::lastLearningRate() const {
    return learningRate_->data()->isEmpty() ? 0.0 : (learningRate_->data()->constEnd() - 1)->value;
}

QString TrainingDock::stateBadgeText() const {
    return stateLabel_->text();
}

QString TrainingDock::deviceText() const {
    return deviceLabel_->text();
}

QString TrainingDock::logText() const {
    return log_->toPlainText();
}

void TrainingDock::onStep(const train::StepMetrics& m) {
    stepLoss_->addData(double(m.step), m.loss);
    learningRate_->addData(double(m.step), m.lr);
    replot();
}

void TrainingDock::onEpoch(const train::EpochMetrics& m) {
    const double step = double(m.step);
    if (auto it = m.train.find("loss"); it != m.train.end()) epochLoss_->addData(step, it->second);
    if (auto it = m.validation.find("loss"); it != m.validation.end())
        validationLoss_->addData(step, it->second);
    if (scoreMetric_.isEmpty()) {
        // The task's score (spec::MetricDescription::score): accuracy, or R² for regression.
        for (const spec::MetricDescription& d : spec::metric_descriptions())
            if (d.score && (m.validation.count(d.name) != 0 || m.train.count(d.name) != 0)) {
                scoreMetric_ = QString::fromStdString(d.name);
                if (d.task == spec::MetricTask::Regression) {
                    accuracyPlot_->yAxis->setLabel(QString::fromStdString(d.label));
                    if (auto* title = qobject_cast<QCPTextElement*>(
                            accuracyPlot_->plotLayout()->element(0, 0)))
                        title->setText(tr("%1 (regression)").arg(QString::fromStdString(d.label)));
                }
                break;
            }
    }
    const std::string key = scoreMetric_.toStdString();
    // An epoch's x is its number (1-based); a mid-epoch validation sits between two epochs.
    const double epochX =
        progress_.steps_per_epoch > 0 ? step / double(progress_.steps_per_epoch) : m.epoch + 1.0;
    if (auto it = m.train.find(key); it != m.train.end()) trainScore_->addData(epochX, it->second);
    if (auto it = m.validation.find(key); it != m.validation.end())
        validationScore_->addData(epochX, it->second);
    QStringList parts;
    for (const spec::MetricDescription& d : spec::metric_descriptions())
        if (auto it = m.validation.find(d.name); d.headline && it != m.validation.end())
            parts << QStringLiteral("%1 %2")
                         .arg(QString::fromStdString(d.name))
                         .arg(it->second, 0, 'g', 4);
    if (!parts.isEmpty())
        appendLog(
            tr("epoch %1 validation: %2").arg(m.epoch + 1).arg(parts.join(QStringLiteral(", "))));
    replot();
}

void TrainingDock::onProgress(const train::Progress& progress) {
    progress_ = progress;
    updateHeader();
}

void TrainingDock::appendLog(const QString& text, const QString& color) {
    const QString time = QTime::currentTime().toString(QStringLiteral("HH:mm:ss"));
    const QString line =
        QStringLiteral("<span style='color:%1'>%2</span> %3")
            .arg(colors::kFaintText.name(), time,
                 color.isEmpty() ? text.toHtmlEscaped()
                                 : QStringLiteral("<span style='color:%1'>%2</span>")
                                       .arg(color, text.toHtmlEscaped()));
    log_->appendHtml(line);
}

void TrainingDock::updateHeader() {
    const TrainingController::State state = controller_->state();
    if (state != TrainingController::State::Idle) lastStatus_.reset();
    // Idle after a run: how that run ended, as the runs browser says it.
    QString text = stateText(state);
    if (state == TrainingController::State::Idle && lastStatus_) {
        text = QString::fromLatin1(train::run_status_name(*lastStatus_));
        text[0] = text[0].toUpper();
    }
    stateLabel_->setText(text);
    setStyleProperty(stateLabel_, "state", stateName(state));
    const int64_t runId = controller_->runId();
    if (runId >= 0 || !runName_.isEmpty())
        runLabel_->setText(runId >= 0 ? tr("Run %1 · %2").arg(runId).arg(runName_) : runName_);
    if (progress_.epochs <= 0) {
        statsLabel_->clear();
        deviceLabel_->clear();
        return;
    }
    // A finished run's tensors are freed: what is left to say is the peak it reached.
    setLiveText(deviceLabel_, controller_->runProcesses() > 1
                                  ? runPlaceText(*controller_)
                                  : deviceMemoryText(state == TrainingController::State::Idle));
    QStringList stats{progressText(progress_)};
    if (progress_.samples_per_second > 0)
        stats << tr("%1 samples/s").arg(progress_.samples_per_second, 0, 'f', 0);
    if (state != TrainingController::State::Idle)
        stats << tr("ETA %1").arg(formatDuration(progress_.eta_seconds));
    setLiveText(statsLabel_, stats.join(QStringLiteral("  ·  ")));
}

void TrainingDock::replot() {
    // Many events arrive in one drain: fit and draw once, after them, and no more often than
    // every kMinReplotMs (a CNN step every 20 ms redrew three plots 50 times a second: CPU the
    // training threads need on a small machine, for frames nobody can read). Drawing grows with
    // the curves (2 ms at 300 steps, 5-8 ms at 900 here), so the frames also space out to keep
    // it under 1/kDrawBudget of the GUI thread's time. The data is in the graphs at once; only
    // the drawing waits.
    constexpr qint64 kMinReplotMs = 100;
    constexpr qint64 kDrawBudget = 50; // the drawing takes at most 2% of the time
    if (dirty_) return;
    dirty_ = true;
    const qint64 interval = std::max<qint64>(kMinReplotMs, lastDrawMs_ * kDrawBudget);
    const qint64 wait =
        sinceReplot_.isValid() ? std::max<qint64>(0, interval - sinceReplot_.elapsed()) : 0;
    QTimer::singleShot(int(wait), this, [this] {
        if (dirty_) drawPlots();
    });
}

void TrainingDock::drawPlots() {
    dirty_ = false;
    sinceReplot_.start();
    for (QCustomPlot* plot : {lossPlot_, accuracyPlot_, lrPlot_}) {
        fitAxes(plot);
        plot->replot();
    }
    lastDrawMs_ = sinceReplot_.elapsed();
}

} // namespace myelin::ui
