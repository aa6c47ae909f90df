// The Training page's learning-rate preview: the plot of the schedule's lr over the whole run
// (at most kMaxPreviewPoints steps of it, lr_preview_sampling.h) with its hover readout, the
// summary and notes around it, the ReduceLROnPlateau note in its place, and the steps per epoch it
// assumes when the data's size is not known.
#include "pages/training_page.h"

#include "document/project_document.h"
#include "pages/class_weights_editor.h"
#include "pages/lr_preview_sampling.h"
#include "pages/page_text.h"
#include "pages/training_page_form.h"
#include "widgets/theme.h"

#include <myelin/error.h>
#include <myelin/optim/optimizer.h>
#include <myelin/spec/components.h>
#include <myelin/train/data_setup.h>

#include <qcustomplot.h>

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QMouseEvent>
#include <QSpinBox>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>

namespace myelin::ui {

using namespace training_form;

namespace {

// Filling under a curve costs Qt's rasterizer more than in proportion to how often the curve
// turns back (1.5 s for the ~700 turns of a restarting schedule over a long run, 20 ms for 64);
// beyond this many turns the curve reads as a band and is drawn without the fill.
constexpr int kMaxFilledTurns = 64;

QBrush curveFill() {
    QColor fill = colors::kAccent;
    fill.setAlpha(28);
    return fill;
}

// How often the values change from rising to falling or back.
int turns(const std::vector<double>& values) {
    int count = 0, direction = 0;
    for (size_t i = 1; i < values.size(); ++i) {
        const int d = values[i] > values[i - 1] ? 1 : values[i] < values[i - 1] ? -1 : 0;
        if (d != 0 && direction != 0 && d != direction) ++count;
        if (d != 0) direction = d;
    }
    return count;
}

// 1, 2, 5, 10, 20, ... so that `range` shows about `target` integer ticks.
double niceIntegerStep(double range, int target = 8) {
    double step = 1;
    for (int i = 0; range / step > target; ++i)
        step *= (i % 3 == 1) ? 2.5 : 2;
    return step;
}

} // namespace

QWidget* TrainingPage::buildPreview() {
    auto* panel = new QWidget(this);
    panel->setObjectName(QStringLiteral("trainingPreview"));
    auto* column = new QVBoxLayout(panel);
    column->setContentsMargins(24, 16, 24, 16);
    column->setSpacing(8);

    auto* title = new QLabel(tr("Learning-rate preview"), panel);
    title->setObjectName(QStringLiteral("previewTitle"));
    column->addWidget(title);
    previewSummary_ = noteLabel(QStringLiteral("lrPreviewSummary"), panel);
    previewSummary_->setTextFormat(Qt::RichText);
    column->addWidget(previewSummary_);

    previewStack_ = new QStackedWidget(panel);
    plot_ = new QCustomPlot(previewStack_);
    plot_->setObjectName(QStringLiteral("lrPreviewPlot"));
    plot_->setMinimumHeight(260);
    stylePlot(plot_, {plot_->xAxis, plot_->yAxis, plot_->xAxis2}, colors::kEdge);
    plot_->setMouseTracking(true);
    plot_->installEventFilter(this);
    QCPGraph* graph = plot_->addGraph();
    graph->setPen(QPen(colors::kAccent, 2));
    graph->setBrush(curveFill());
    graph->setAntialiased(true);
    // A 2-pixel polyline that turns back hundreds of times (restarts) costs seconds stroked as
    // one outline; segment by segment, milliseconds.
    plot_->setPlottingHint(QCP::phFastPolylines, true);
    for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis, plot_->xAxis2})
        axis->grid()->setZeroLinePen(Qt::NoPen);
    plot_->xAxis2->grid()->setVisible(false);
    plot_->yAxis->setLabel(tr("Learning rate"));
    plot_->yAxis->setNumberFormat(QStringLiteral("g"));
    plot_->yAxis->setNumberPrecision(3);
    plot_->xAxis->setTicker(QSharedPointer<QCPAxisTickerFixed>::create());
    plot_->xAxis2->setTicker(QSharedPointer<QCPAxisTickerFixed>::create());
    // Placed at a data point by hand (no graph attached: it would complain while the plot is
    // empty).
    tracer_ = new QCPItemTracer(plot_);
    tracer_->setStyle(QCPItemTracer::tsCircle);
    tracer_->setSize(8);
    tracer_->setPen(QPen(colors::kAccent, 2));
    tracer_->setBrush(colors::kSurface);
    tracer_->setVisible(false);
    hoverText_ = new QCPItemText(plot_);
    hoverText_->position->setType(QCPItemPosition::ptAxisRectRatio);
    hoverText_->position->setCoords(0.98, 0.04);
    hoverText_->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
    hoverText_->setColor(colors::kText);
    hoverText_->setBrush(colors::kSurface);
    hoverText_->setPen(QPen(colors::kBorder));
    hoverText_->setPadding(QMargins(6, 3, 6, 3));
    hoverText_->setVisible(false);
    connect(plot_, &QCustomPlot::mouseMove, this, &TrainingPage::showHover);
    previewStack_->addWidget(plot_);

    plateauNote_ = noteLabel(QStringLiteral("lrPreviewPlateauNote"), previewStack_);
    plateauNote_->setAlignment(Qt::AlignCenter);
    plateauNote_->setTextFormat(Qt::RichText);
    auto* plateauPage = new QWidget(previewStack_);
    auto* plateauBox = new QVBoxLayout(plateauPage);
    plateauBox->setContentsMargins(0, 24, 0, 24);
    plateauBox->addStretch(1);
    plateauBox->addWidget(plateauNote_);
    plateauBox->addStretch(2);
    previewStack_->addWidget(plateauPage);
    column->addWidget(previewStack_, 1);

    previewError_ = noteLabel(QStringLiteral("lrPreviewError"), panel);
    previewError_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    previewError_->hide();
    column->addWidget(previewError_);
    previewNote_ = noteLabel(QStringLiteral("lrPreviewNote"), panel);
    column->addWidget(previewNote_);
    stepsInfo_ = noteLabel(QStringLiteral("lrPreviewSteps"), panel);
    column->addWidget(stepsInfo_);

    // Without a known training-set size the per-step preview needs an assumption: said as one.
    assumeRow_ = new QWidget(panel);
    auto* assume = new QHBoxLayout(assumeRow_);
    assume->setContentsMargins(0, 0, 0, 0);
    assume->setSpacing(6);
    auto* assumeLabel = new QLabel(
        tr("Steps per epoch are known once the data is loaded; the preview assumes"), assumeRow_);
    assumeLabel->setObjectName(QStringLiteral("assumeStepsLabel"));
    assumedSteps_ = intSpin(QStringLiteral("previewStepsPerEpoch"), 1, 10000000,
                            tr("Only for this preview; not saved in the project."), assumeRow_);
    assumedSteps_->setValue(100);
    auto* assumeSuffix = new QLabel(tr("steps per epoch."), assumeRow_);
    assumeSuffix->setObjectName(QStringLiteral("assumeStepsSuffix"));
    assume->addWidget(assumeLabel);
    assume->addWidget(assumedSteps_);
    assume->addWidget(assumeSuffix);
    assume->addStretch(1);
    connect(assumedSteps_, &QSpinBox::valueChanged, this, [this] {
        updatePreview();
        updateOverview();
    });
    column->addWidget(assumeRow_);

    column->addSpacing(6);
    column->addWidget(sectionHeading(tr("Run overview"), panel));
    overview_ = noteLabel(QStringLiteral("trainOverview"), panel);
    overview_->setTextFormat(Qt::RichText);
    column->addWidget(overview_);
    return panel;
}

// --- the preview ---------------------------------------------------------------------------------

std::optional<int64_t> TrainingPage::knownStepsPerEpoch() const {
    if (!document_->isOpen()) return std::nullopt;
    // Data-parallel: each process steps through its own share of the examples, so its
    // schedule has fewer steps per epoch than one process's.
    return train::known_steps_per_epoch(document_->project().data,
                                        document_->project().train.accumulation_steps, processes());
}

bool TrainingPage::stepsPerEpochKnown() const {
    return knownStepsPerEpoch().has_value();
}

int64_t TrainingPage::previewStepsPerEpoch() const {
    return knownStepsPerEpoch().value_or(assumedSteps_->value());
}

int64_t TrainingPage::previewSteps(const spec::TrainSpec& t) const {
    return std::max<int64_t>(1, train::schedule_steps(t, previewStepsPerEpoch()));
}

QString TrainingPage::buildError(const spec::TrainSpec& t) const {
    try {
        // Class weights by name are checked against the data's classes once they are read.
        spec::LossContext context;
        if (classCounts_->known()) context.class_names = classCounts_->names();
        const spec::LossKind& loss = spec::kind_of(spec::loss_kinds(), t.loss, "loss");
        if (classCounts_->known() || !spec::loss_takes_class_indices(t.loss.kind))
            train::make_loss(t.loss, context);
        else
            spec::checked_options(loss, t.loss);
        auto optimizer = train::make_preview_optimizer(t.optimizer);
        if (t.scheduler) train::Schedule schedule(*t.scheduler, *optimizer, previewSteps(t));
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

QString TrainingPage::previewError() const {
    return previewError_->isHidden() ? QString() : previewError_->text();
}

void TrainingPage::updatePreview() {
    previewX_.clear();
    previewLr_.clear();
    tracer_->setVisible(false);
    hoverText_->setVisible(false);
    QString error, note, summary;
    bool plateau = false;
    bool perStep = false;
    int64_t total = 0;
    double startLr = 0;
    const bool open = document_->isOpen();
    const spec::TrainSpec t = open ? document_->project().train : spec::TrainSpec{};
    if (open) {
        plateau = t.scheduler && spec::schedule_is_metric_driven(t.scheduler->kind);
        perStep = train::schedules_per_step(t);
        total = previewSteps(t);
        try {
            const spec::ComponentKind* ok =
                spec::find_component(spec::optimizer_kinds(), t.optimizer.kind);
            if (ok == nullptr) throw Error("unknown optimizer '" + t.optimizer.kind + "'");
            startLr = graph::with_defaults(ok->options, t.optimizer.options).get_float("lr");
            if (plateau) {
                // Metric-driven: nothing to plot, but core still checks the options.
                train::preview_lr(t.optimizer, *t.scheduler, 1);
            } else if (!t.scheduler) {
                train::make_preview_optimizer(t.optimizer); // checks the options
                const PreviewSampling sampling =
                    samplePreviewSteps(total, [](int64_t) { return std::optional<int64_t>(); });
                for (int64_t s : sampling.steps) {
                    previewX_.push_back(double(s + 1));
                    previewLr_.push_back(startLr);
                }
            } else {
                // The closed form (Schedule::lr_at) at a bounded set of steps that keeps the
                // curve's corners: the cost does not grow with the run, T_max or the warmup.
                auto optimizer = train::make_preview_optimizer(t.optimizer);
                const train::Schedule schedule(*t.scheduler, *optimizer, total);
                const PreviewSampling sampling = samplePreviewSteps(
                    total, [&schedule](int64_t after) { return schedule.next_corner(after); });
                previewX_.reserve(sampling.steps.size());
                previewLr_.reserve(sampling.steps.size());
                for (int64_t s : sampling.steps) {
                    previewX_.push_back(double(s + 1));
                    previewLr_.push_back(*schedule.lr_at(s));
                }
                if (int64_t(sampling.steps.size()) < total)
                    note =
                        (sampling.everyCorner
                             ? tr("%1 steps: drawn at %2 of them, with each step where the "
                                  "schedule changes phase.")
                             : tr("%1 steps: drawn at %2 of them; the schedule changes phase "
                                  "too often to mark each change."))
                            .arg(groupDigits(total), groupDigits(int64_t(sampling.steps.size())));
            }
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
            previewX_.clear();
            previewLr_.clear();
        }
    }
    // A refused edit is explained, while the plot keeps showing the project's settings.
    if (!refusedError_.isEmpty()) error = refusedError_;
    previewError_->setText(error);
    previewError_->setVisible(!error.isEmpty());

    const QString unit = perStep ? tr("optimizer steps") : tr("epochs");
    if (!open) {
        summary = tr("No project open.");
    } else if (plateau) {
        summary =
            tr("<b>ReduceLROnPlateau</b> on %1, starting at %2.")
                .arg(QString::fromStdString(t.plateau_metric).toHtmlEscaped(), numberText(startLr));
    } else if (!previewLr_.empty()) {
        const auto [lo, hi] = std::minmax_element(previewLr_.begin(), previewLr_.end());
        if (!t.scheduler)
            summary = tr("Constant learning rate <b>%1</b> (%2, no schedule) for %3 %4.")
                          .arg(numberText(startLr), QString::fromStdString(t.optimizer.kind))
                          .arg(groupDigits(total))
                          .arg(unit);
        else
            summary = tr("<b>%1</b> over %2 %3: from %4 to %5 (lowest %6, highest %7).")
                          .arg(QString::fromStdString(t.scheduler->kind))
                          .arg(groupDigits(total))
                          .arg(unit, numberText(previewLr_.front()), numberText(previewLr_.back()),
                               numberText(*lo), numberText(*hi));
    } else {
        summary = tr("The schedule cannot be previewed with these settings.");
    }
    previewSummary_->setText(summary);

    // Per-layer lr multipliers scale their parameter group's curve.
    if (open)
        for (const graph::Node& node : document_->spec().nodes)
            if (node.lr_multiplier != 1.0 && !node.frozen) {
                note += (note.isEmpty() ? QString() : QStringLiteral(" "));
                note += tr("Layers with an LR multiplier follow this curve times their "
                           "multiplier.");
                break;
            }
    previewNote_->setText(note);
    previewNote_->setVisible(!note.isEmpty());

    const std::optional<int64_t> known = knownStepsPerEpoch();
    assumeRow_->setVisible(open && perStep && !known);
    QString steps;
    if (open && perStep && known) {
        const spec::DataSpec& d = document_->project().data;
        const spec::DataSourceKind* source =
            spec::find_component(spec::data_source_kinds(), d.source.kind);
        const QString examples = source && !source->fixed_training_examples_label.empty()
                                     ? QString::fromStdString(source->fixed_training_examples_label)
                                     : tr("training examples");
        steps = tr("x: optimizer steps, %1 per epoch (%2 %3 after the validation split in "
                   "batches of %4%5) × %6 epochs.")
                    .arg(groupDigits(*known),
                         groupDigits(train::known_training_examples(d).value_or(0)), examples)
                    .arg(d.batch_size)
                    .arg(t.accumulation_steps > 1
                             ? tr(", %1 micro-batches per step").arg(t.accumulation_steps)
                             : QString())
                    .arg(t.epochs);
    } else if (open && !perStep && !plateau && t.scheduler) {
        steps = tr("x: epochs (the schedule steps once per epoch).");
    }
    stepsInfo_->setText(steps);
    stepsInfo_->setVisible(!steps.isEmpty());

    if (plateau && open) {
        const spec::ComponentKind* sk =
            spec::find_component(spec::scheduler_kinds(), t.scheduler->kind);
        QString detail;
        try {
            const graph::Attrs o = graph::with_defaults(sk->options, t.scheduler->options);
            detail = tr("It starts at %1 and multiplies it by %2 whenever %3 has not improved "
                        "(mode %4, threshold %5 %6) for %7 epochs, waits %8 epochs after each "
                        "reduction, and never goes below %9.")
                         .arg(numberText(startLr), numberText(o.get_float("factor")),
                              QString::fromStdString(t.plateau_metric).toHtmlEscaped(),
                              QString::fromStdString(o.get_string("mode")),
                              numberText(o.get_float("threshold")),
                              QString::fromStdString(o.get_string("threshold_mode")))
                         .arg(o.get_int("patience"))
                         .arg(o.get_int("cooldown"))
                         .arg(numberText(o.get_float("min_lr")));
        } catch (const std::exception&) {
            detail.clear(); // the options error is shown under the plot
        }
        plateauNote_->setText(tr("<p><b>No curve to preview.</b></p><p>ReduceLROnPlateau "
                                 "follows the metric during the run, so its learning rate is "
                                 "only known while training.</p><p>%1</p>")
                                  .arg(detail));
        previewStack_->setCurrentIndex(1);
    } else {
        previewStack_->setCurrentIndex(0);
    }

    // The plot.
    QCPGraph* graph = plot_->graph(0);
    graph->setData(QVector<double>(previewX_.begin(), previewX_.end()),
                   QVector<double>(previewLr_.begin(), previewLr_.end()), true);
    graph->setBrush(turns(previewLr_) <= kMaxFilledTurns ? curveFill() : QBrush(Qt::NoBrush));
    const bool dots = !perStep && previewLr_.size() <= 60;
    graph->setScatterStyle(
        dots ? QCPScatterStyle(QCPScatterStyle::ssCircle, colors::kAccent, colors::kSurface, 6)
             : QCPScatterStyle());
    plot_->xAxis->setLabel(perStep ? tr("Optimizer step") : tr("Epoch"));
    const double span = double(std::max<int64_t>(total, 1));
    if (perStep)
        plot_->xAxis->setRange(0, span);
    else
        plot_->xAxis->setRange(0.5, span + 0.5);
    plot_->xAxis->ticker().staticCast<QCPAxisTickerFixed>()->setTickStep(niceIntegerStep(span));
    // Epochs along the top of a per-step plot.
    const double perEpoch = double(std::max<int64_t>(previewStepsPerEpoch(), 1));
    plot_->xAxis2->setVisible(perStep);
    plot_->xAxis2->setTickLabels(perStep);
    if (perStep) {
        plot_->xAxis2->setLabel(tr("Epoch"));
        plot_->xAxis2->setRange(0, span / perEpoch);
        plot_->xAxis2->ticker().staticCast<QCPAxisTickerFixed>()->setTickStep(
            niceIntegerStep(span / perEpoch));
    }
    double top = 1e-3;
    if (!previewLr_.empty()) top = *std::max_element(previewLr_.begin(), previewLr_.end());
    if (!(top > 0) || !std::isfinite(top)) top = 1e-3;
    plot_->yAxis->setRange(0, top * 1.08);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void TrainingPage::showHover(QMouseEvent* event) {
    if (previewX_.empty()) return;
    const double x = plot_->xAxis->pixelToCoord(event->position().x());
    auto it = std::lower_bound(previewX_.begin(), previewX_.end(), x);
    if (it == previewX_.end()) --it;
    if (it != previewX_.begin() && x - *(it - 1) < *it - x) --it;
    const size_t i = size_t(it - previewX_.begin());
    tracer_->position->setCoords(previewX_[i], previewLr_[i]);
    tracer_->setVisible(true);
    const bool perStep = plot_->xAxis2->visible();
    hoverText_->setText(
        (perStep ? tr("step %1 (epoch %2)")
                       .arg(groupDigits(int64_t(previewX_[i])))
                       .arg(QString::number((previewX_[i] - 1) / double(previewStepsPerEpoch()) + 1,
                                            'f', 2))
                 : tr("epoch %1").arg(int64_t(previewX_[i]))) +
        tr("  ·  lr %1").arg(QString::number(previewLr_[i], 'g', 6)));
    hoverText_->setVisible(true);
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool TrainingPage::eventFilter(QObject* watched, QEvent* event) {
    if (watched == plot_ && event->type() == QEvent::Leave && tracer_->visible()) {
        tracer_->setVisible(false);
        hoverText_->setVisible(false);
        plot_->replot(QCustomPlot::rpQueuedReplot);
    }
    return QWidget::eventFilter(watched, event);
}

} // namespace myelin::ui
