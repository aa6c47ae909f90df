#include "pages/training_page.h"

#include "document/project_document.h"
#include "widgets/theme.h"

#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/optim/optimizer.h>
#include <myelin/tensor.h>
#include <myelin/train/data_setup.h>
#include <myelin/train/trainer.h>

#include <qcustomplot.h>

#include <QCheckBox>
#include <QComboBox>
#include <QEvent>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMouseEvent>
#include <QRegularExpression>
#include <QRegularExpressionValidator>
#include <QResizeEvent>
#include <QScrollArea>
#include <QSpinBox>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <climits>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>

namespace myelin::ui {

namespace {

constexpr int kSettingsWidth = 450;
constexpr int kLabelWidth = 150;
// Beyond this many steps the preview samples the schedule (Schedule::lr_at) instead of
// computing every step, so a long run still previews instantly.
constexpr int64_t kMaxPreviewPoints = 20000;
const char* kStyleSheet = R"(
#trainingPage, #trainingSettingsContent, #trainingPreview { background: #FFFFFF; }
#trainingSettingsScroll { background: #FFFFFF; border: none; border-right: 1px solid #DDE1E6; }
#trainingBanner {
    background: #FDF6E3; color: #7A5200; border-bottom: 1px solid #EBD9A8; padding: 8px 16px;
}
#previewTitle { font-size: 12pt; font-weight: bold; color: #1F2933; }
#lrPreviewSummary { color: #1F2933; }
#lrPreviewNote, #lrPreviewSteps, #assumeStepsLabel, #assumeStepsSuffix { color: #52606D; }
#lrPreviewError { color: #C62828; }
#lrPreviewPlateauNote {
    color: #3E4C59; background: #F7F8FA; border: 1px dashed #C4CBD3; border-radius: 6px;
    padding: 24px 32px;
}
#trainOverview {
    color: #1F2933; background: #F7F8FA; border: 1px solid #E4E7EB; border-radius: 6px;
    padding: 8px 12px;
}
QLabel[class="componentDoc"] { color: #52606D; }
QLabel[class="fieldWarning"] { color: #B7791F; font-size: 8.5pt; }
)";

QFormLayout* makeForm(QWidget* parent = nullptr) {
    auto* form = new QFormLayout(parent);
    form->setLabelAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setRowWrapPolicy(QFormLayout::DontWrapRows);
    form->setHorizontalSpacing(12);
    form->setVerticalSpacing(6);
    return form;
}

// The same label width in every form of the page, so fields line up across sections.
void alignLabels(QFormLayout* form) {
    for (int r = 0; r < form->rowCount(); ++r)
        if (QLayoutItem* item = form->itemAt(r, QFormLayout::LabelRole))
            if (QWidget* label = item->widget()) label->setMinimumWidth(kLabelWidth);
}

// A word-wrapped label whose preferred height is the one its current width needs. QLabel's
// own size hint picks a narrow "pleasant" width for short texts, which makes form rows in the
// scroll area taller than their text.
class WrappedLabel : public QLabel {
  public:
    using QLabel::QLabel;
    QSize sizeHint() const override {
        const int w = std::max(width(), minimumSizeHint().width());
        return {w, heightForWidth(w)};
    }

  protected:
    void resizeEvent(QResizeEvent* event) override {
        QLabel::resizeEvent(event);
        if (event->oldSize().width() != width()) updateGeometry();
    }
};

QLabel* noteLabel(const QString& objectName, QWidget* parent) {
    auto* label = new WrappedLabel(parent);
    label->setObjectName(objectName);
    label->setWordWrap(true);
    return label;
}

QLabel* fieldMessage(const QString& objectName, const char* cls, QWidget* parent) {
    QLabel* label = noteLabel(objectName, parent);
    label->setProperty("class", QString::fromLatin1(cls));
    label->hide();
    return label;
}

// A field with a message line under it (errors, warnings).
QVBoxLayout* withMessage(QWidget* editor, QLabel* message) {
    auto* field = new QVBoxLayout;
    field->setSpacing(2);
    field->addWidget(editor);
    field->addWidget(message);
    return field;
}

QSpinBox* intSpin(const QString& objectName, int lo, int hi, const QString& tip, QWidget* parent) {
    auto* spin = new QSpinBox(parent);
    spin->setObjectName(objectName);
    spin->setRange(lo, hi);
    spin->setKeyboardTracking(false);
    spin->setAccelerated(true);
    spin->setToolTip(tip);
    return spin;
}

FloatSpinBox* floatSpin(const QString& objectName, double lo, double hi, const QString& tip,
                        QWidget* parent) {
    auto* spin = new FloatSpinBox(parent);
    spin->setObjectName(objectName);
    spin->setDecimals(15); // FloatSpinBox shows the shortest text; keep small values exact
    spin->setRange(lo, hi);
    spin->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
    spin->setKeyboardTracking(false);
    spin->setToolTip(tip);
    return spin;
}

// "1 epoch", "5 epochs": the suffix follows the value.
void updateUnit(QSpinBox* spin) {
    const QVariant one = spin->property("unitOne");
    if (one.isValid())
        spin->setSuffix(spin->value() == 1 ? one.toString()
                                           : spin->property("unitMany").toString());
}

void setUnits(QSpinBox* spin, const QString& one, const QString& many) {
    spin->setProperty("unitOne", one);
    spin->setProperty("unitMany", many);
    updateUnit(spin);
    QObject::connect(spin, &QSpinBox::valueChanged, spin, [spin] { updateUnit(spin); });
}

void showInt(QSpinBox* spin, int64_t value) {
    const QSignalBlocker blocker(spin);
    spin->setValue(int(std::clamp<int64_t>(value, spin->minimum(), spin->maximum())));
    updateUnit(spin);
}

void showIndexOfData(QComboBox* combo, const QString& data) {
    const QSignalBlocker blocker(combo);
    combo->setCurrentIndex(combo->findData(data));
}

QString number(double v) {
    return QString::number(v, 'g', 4);
}
QString count(int64_t v) {
    return QLocale(QLocale::English).toString(qlonglong(v));
}

// 1, 2, 5, 10, 20, ... so that `range` shows about `target` integer ticks.
double niceIntegerStep(double range, int target = 8) {
    double step = 1;
    for (int i = 0; range / step > target; ++i)
        step *= (i % 3 == 1) ? 2.5 : 2;
    return step;
}

} // namespace

TrainingPage::TrainingPage(ProjectDocument* document, QWidget* parent)
    : QWidget(parent), document_(document) {
    setObjectName(QStringLiteral("trainingPage"));
    setAttribute(Qt::WA_StyledBackground, true);
    setStyleSheet(QString::fromLatin1(kStyleSheet) + QString::fromLatin1(kFormStyleSheet));

    loss_.family = spec::Family::Loss;
    loss_.what = tr("loss");
    loss_.get = [](const spec::TrainSpec& t) { return std::optional<spec::Choice>(t.loss); };
    loss_.set = [](spec::TrainSpec& t, std::optional<spec::Choice> c) {
        if (c) t.loss = std::move(*c);
    };
    optimizer_.family = spec::Family::Optimizer;
    optimizer_.what = tr("optimizer");
    optimizer_.get = [](const spec::TrainSpec& t) {
        return std::optional<spec::Choice>(t.optimizer);
    };
    optimizer_.set = [](spec::TrainSpec& t, std::optional<spec::Choice> c) {
        if (c) t.optimizer = std::move(*c);
    };
    scheduler_.family = spec::Family::Scheduler;
    scheduler_.optional = true;
    scheduler_.what = tr("LR schedule");
    scheduler_.get = [](const spec::TrainSpec& t) { return t.scheduler; };
    scheduler_.set = [](spec::TrainSpec& t, std::optional<spec::Choice> c) { t.scheduler = c; };

    buildUi();

    connect(document_, &ProjectDocument::trainSpecChanged, this, &TrainingPage::refresh);
    connect(document_, &ProjectDocument::projectReplaced, this, &TrainingPage::refresh);
    // Steps per epoch, validation split, the loss's metrics and the model's classes and layer
    // names come from the other parts of the project.
    connect(document_, &ProjectDocument::dataSpecChanged, this, &TrainingPage::refresh);
    connect(document_, &ProjectDocument::modelChanged, this, [this](bool layoutOnly) {
        if (!layoutOnly) refresh();
    });
    refresh();
}

TrainingPage::~TrainingPage() = default;

void TrainingPage::buildUi() {
    auto* root = new QVBoxLayout(this);
    root->setContentsMargins(0, 0, 0, 0);
    root->setSpacing(0);
    banner_ = new QLabel(this);
    banner_->setObjectName(QStringLiteral("trainingBanner"));
    banner_->setWordWrap(true);
    banner_->hide();
    root->addWidget(banner_);

    auto* body = new QHBoxLayout;
    body->setContentsMargins(0, 0, 0, 0);
    body->setSpacing(0);
    root->addLayout(body, 1);

    scroll_ = new QScrollArea(this);
    scroll_->setObjectName(QStringLiteral("trainingSettingsScroll"));
    scroll_->setWidgetResizable(true);
    scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff); // the form follows the width
    scroll_->setFixedWidth(kSettingsWidth);
    scroll_->setWidget(buildSettings());
    body->addWidget(scroll_);
    body->addWidget(buildPreview(), 1);
}

QWidget* TrainingPage::buildSettings() {
    settings_ = new QWidget;
    settings_->setObjectName(QStringLiteral("trainingSettingsContent"));
    auto* column = new QVBoxLayout(settings_);
    column->setContentsMargins(16, 10, 16, 16);
    column->setSpacing(4);
    std::vector<QFormLayout*> forms;
    auto section = [&](const QString& heading) {
        column->addWidget(sectionHeading(heading, settings_));
        QFormLayout* form = makeForm();
        column->addLayout(form);
        column->addSpacing(6);
        forms.push_back(form);
        return form;
    };

    // --- Loss, optimizer, schedule -------------------------------------------------------------
    buildComponent(loss_, section(tr("Loss")), QStringLiteral("loss"));
    buildComponent(optimizer_, section(tr("Optimizer")), QStringLiteral("optimizer"));
    QFormLayout* schedule = section(tr("Schedule"));
    buildComponent(scheduler_, schedule, QStringLiteral("scheduler"));

    interval_ = new QComboBox(settings_);
    interval_->setObjectName(QStringLiteral("schedulerInterval"));
    interval_->addItem(tr("once per epoch"), QStringLiteral("epoch"));
    interval_->addItem(tr("every optimizer step"), QStringLiteral("step"));
    interval_->setToolTip(tr("When the scheduler steps: after every epoch, or after every "
                             "optimizer step (warmup, T_max, step_size... count these steps)."));
    // Above the options, which count in these units.
    schedule->insertRow(2, tr("Steps"), interval_);
    connect(interval_, &QComboBox::currentIndexChanged, this, [this] {
        const QString interval = interval_->currentData().toString();
        commit([&](spec::TrainSpec& t) { t.scheduler_interval = interval.toStdString(); },
               interval == QLatin1String("step") ? tr("Step the LR schedule every optimizer step")
                                                 : tr("Step the LR schedule once per epoch"));
    });

    plateauMetric_ = new QComboBox(settings_);
    plateauMetric_->setObjectName(QStringLiteral("plateauMetric"));
    plateauMetric_->setToolTip(tr("The metric ReduceLROnPlateau watches at the end of every "
                                  "epoch. Choosing one also sets the schedule's mode (min for "
                                  "losses and errors, max for accuracy, F1, R²)."));
    plateauMetricWarning_ =
        fieldMessage(QStringLiteral("plateauMetricWarning"), "fieldWarning", settings_);
    plateauMetricLabel_ = new QLabel(tr("Metric"), settings_);
    schedule->insertRow(3, plateauMetricLabel_, withMessage(plateauMetric_, plateauMetricWarning_));
    scheduleForm_ = schedule;
    connect(plateauMetric_, &QComboBox::currentIndexChanged, this, [this] {
        const QString metric = plateauMetric_->currentText();
        if (metric.isEmpty()) return;
        commit(
            [&](spec::TrainSpec& t) {
                t.plateau_metric = metric.toStdString();
                if (t.scheduler && spec::schedule_is_metric_driven(t.scheduler->kind))
                    t.scheduler->options.set(
                        "mode",
                        std::string(train::higher_is_better(metric.toStdString()) ? "max" : "min"));
            },
            tr("Change the plateau metric to %1").arg(metric));
    });

    // --- Run -----------------------------------------------------------------------------------
    QFormLayout* run = section(tr("Run"));
    epochs_ = intSpin(QStringLiteral("trainEpochs"), 1, 1000000,
                      tr("Passes over the training set."), settings_);
    run->addRow(tr("Epochs"), epochs_);
    connect(epochs_, &QSpinBox::valueChanged, this, [this](int v) {
        commit([v](spec::TrainSpec& t) { t.epochs = v; }, tr("Change epochs to %1").arg(v),
               QStringLiteral("train.epochs"));
    });

    accumulation_ = intSpin(QStringLiteral("trainAccumulation"), 1, 65536,
                            tr("Micro-batches whose gradients add up before each optimizer step: "
                               "the effective batch is batch size × this."),
                            settings_);
    run->addRow(tr("Accumulation"), accumulation_);
    setUnits(accumulation_, tr(" micro-batch per step"), tr(" micro-batches per step"));
    connect(accumulation_, &QSpinBox::valueChanged, this, [this](int v) {
        commit([v](spec::TrainSpec& t) { t.accumulation_steps = v; },
               tr("Change gradient accumulation to %1").arg(v),
               QStringLiteral("train.accumulation"));
    });

    // Optional clipping: a check box enabling the value.
    auto optionalClip = [&](QCheckBox*& box, QDoubleSpinBox*& spin, const QString& name,
                            const QString& label, const QString& tip,
                            std::optional<double> spec::TrainSpec::*field, const QString& what) {
        box = new QCheckBox(settings_);
        box->setObjectName(name + QStringLiteral("Enabled"));
        box->setToolTip(tip);
        spin = floatSpin(name, 1e-12, 1e12, tip, settings_);
        spin->setValue(1.0);
        auto* line = new QHBoxLayout;
        line->setSpacing(8);
        line->addWidget(box);
        line->addWidget(spin, 1);
        run->addRow(label, line);
        QCheckBox* b = box;
        QDoubleSpinBox* s = spin;
        connect(box, &QCheckBox::toggled, this, [this, s, field, what](bool on) {
            s->setEnabled(on);
            const double v = s->value();
            commit(
                [&](spec::TrainSpec& t) {
                    t.*field = on ? std::optional<double>(v) : std::nullopt;
                },
                on ? tr("Clip gradients by %1 at %2").arg(what, number(v))
                   : tr("Stop clipping gradients by %1").arg(what));
        });
        connect(spin, &QDoubleSpinBox::valueChanged, this, [this, b, field, what, name](double v) {
            if (!b->isChecked()) return;
            commit([&](spec::TrainSpec& t) { t.*field = v; },
                   tr("Clip gradients by %1 at %2").arg(what, number(v)),
                   QStringLiteral("train.") + name);
        });
    };
    optionalClip(clipNormEnabled_, clipNorm_, QStringLiteral("trainClipNorm"), tr("Clip grad norm"),
                 tr("Scale all gradients down together when their total L2 norm exceeds this "
                    "(clip_grad_norm_)."),
                 &spec::TrainSpec::clip_grad_norm, tr("norm"));
    optionalClip(clipValueEnabled_, clipValue_, QStringLiteral("trainClipValue"),
                 tr("Clip grad value"),
                 tr("Clamp every gradient element to [-value, value] (clip_grad_value_)."),
                 &spec::TrainSpec::clip_grad_value, tr("value"));

    precision_ = new QComboBox(settings_);
    precision_->setObjectName(QStringLiteral("trainPrecision"));
    precision_->addItem(QStringLiteral("float32"), QStringLiteral("float32"));
    precision_->addItem(tr("bfloat16 (mixed)"), QStringLiteral("bfloat16"));
    precision_->setToolTip(
        tr("float32: everything in float32. bfloat16: linear layers and convolutions multiply "
           "in bfloat16 (autocast); weights, gradients, optimizer state, normalisations and the "
           "loss stay float32."));
    run->addRow(tr("Precision"), precision_);
    connect(precision_, &QComboBox::currentIndexChanged, this, [this] {
        const QString precision = precision_->currentData().toString();
        commit([&](spec::TrainSpec& t) { t.precision = precision.toStdString(); },
               tr("Change precision to %1").arg(precision));
    });

    seed_ = new QLineEdit(settings_);
    seed_->setObjectName(QStringLiteral("trainSeed"));
    seed_->setValidator(
        new QRegularExpressionValidator(QRegularExpression(QStringLiteral("[0-9]{0,19}")), seed_));
    seed_->setToolTip(tr("Seeds weight initialization, the validation split, shuffling and "
                         "augmentation: the same seed repeats a run."));
    seedError_ = fieldMessage(QStringLiteral("trainSeedError"), "fieldError", settings_);
    run->addRow(tr("Seed"), withMessage(seed_, seedError_));
    connect(seed_, &QLineEdit::editingFinished, this, &TrainingPage::commitSeed);

    validateEvery_ = intSpin(QStringLiteral("trainValidateEvery"), 0, INT_MAX,
                             tr("Also evaluate the validation split every N optimizer steps "
                                "(0: only at the end of each epoch)."),
                             settings_);
    validateEvery_->setSpecialValueText(tr("end of each epoch"));
    setUnits(validateEvery_, tr(" step"), tr(" steps"));
    run->addRow(tr("Validate every"), validateEvery_);
    connect(validateEvery_, &QSpinBox::valueChanged, this, [this](int v) {
        commit([v](spec::TrainSpec& t) { t.validate_every_steps = v; },
               v == 0 ? tr("Validate once per epoch") : tr("Validate every %1 steps").arg(v),
               QStringLiteral("train.validateEvery"));
    });

    threads_ = intSpin(QStringLiteral("trainThreads"), 0, 4096,
                       tr("CPU threads for training (0: the machine's default)."), settings_);
    threads_->setSpecialValueText(tr("machine default"));
    run->addRow(tr("Threads"), threads_);
    connect(threads_, &QSpinBox::valueChanged, this, [this](int v) {
        commit([v](spec::TrainSpec& t) { t.threads = v; },
               v == 0 ? tr("Use the default number of threads") : tr("Change threads to %1").arg(v),
               QStringLiteral("train.threads"));
    });

    // --- Early stopping ------------------------------------------------------------------------
    QFormLayout* es = section(tr("Early stopping"));
    esEnabled_ = new QCheckBox(settings_);
    esEnabled_->setObjectName(QStringLiteral("earlyStoppingEnabled"));
    esEnabled_->setToolTip(tr("Stop training when the metric has not improved for `patience` "
                              "epochs."));
    es->addRow(tr("Enabled"), esEnabled_);
    connect(esEnabled_, &QCheckBox::toggled, this, [this](bool on) {
        commit([on](spec::TrainSpec& t) { t.early_stopping.enabled = on; },
               on ? tr("Enable early stopping") : tr("Disable early stopping"));
    });

    esMetric_ = new QComboBox(settings_);
    esMetric_->setObjectName(QStringLiteral("earlyStoppingMetric"));
    esMetric_->setToolTip(tr("Watched at the end of every epoch; it also picks the best "
                             "checkpoint. Choosing one also sets the mode."));
    esMetricWarning_ =
        fieldMessage(QStringLiteral("earlyStoppingMetricWarning"), "fieldWarning", settings_);
    es->addRow(tr("Metric"), withMessage(esMetric_, esMetricWarning_));
    connect(esMetric_, &QComboBox::currentIndexChanged, this, [this] {
        const QString metric = esMetric_->currentText();
        if (metric.isEmpty()) return;
        commit(
            [&](spec::TrainSpec& t) {
                t.early_stopping.metric = metric.toStdString();
                t.early_stopping.mode =
                    train::higher_is_better(metric.toStdString()) ? "max" : "min";
            },
            tr("Change the early-stopping metric to %1").arg(metric));
    });

    esMode_ = new QComboBox(settings_);
    esMode_->setObjectName(QStringLiteral("earlyStoppingMode"));
    esMode_->addItem(tr("min (lower is better)"), QStringLiteral("min"));
    esMode_->addItem(tr("max (higher is better)"), QStringLiteral("max"));
    es->addRow(tr("Mode"), esMode_);
    connect(esMode_, &QComboBox::currentIndexChanged, this, [this] {
        const QString mode = esMode_->currentData().toString();
        commit([&](spec::TrainSpec& t) { t.early_stopping.mode = mode.toStdString(); },
               tr("Change the early-stopping mode to %1").arg(mode));
    });

    esPatience_ = intSpin(QStringLiteral("earlyStoppingPatience"), 1, 1000000,
                          tr("Epochs without improvement before training stops."), settings_);
    setUnits(esPatience_, tr(" epoch"), tr(" epochs"));
    es->addRow(tr("Patience"), esPatience_);
    connect(esPatience_, &QSpinBox::valueChanged, this, [this](int v) {
        commit([v](spec::TrainSpec& t) { t.early_stopping.patience = v; },
               tr("Change early-stopping patience to %1").arg(v),
               QStringLiteral("train.es.patience"));
    });

    esMinDelta_ = floatSpin(QStringLiteral("earlyStoppingMinDelta"), 0, 1e12,
                            tr("The smallest change that counts as an improvement."), settings_);
    es->addRow(tr("Min delta"), esMinDelta_);
    connect(esMinDelta_, &QDoubleSpinBox::valueChanged, this, [this](double v) {
        commit([v](spec::TrainSpec& t) { t.early_stopping.min_delta = v; },
               tr("Change early-stopping min delta to %1").arg(number(v)),
               QStringLiteral("train.es.minDelta"));
    });

    // --- Checkpoints ---------------------------------------------------------------------------
    QFormLayout* ck = section(tr("Checkpoints"));
    ckEvery_ = intSpin(QStringLiteral("checkpointEvery"), 0, 1000000,
                       tr("Save a checkpoint every N epochs (0: only at the end and on stop)."),
                       settings_);
    ckEvery_->setSpecialValueText(tr("only at the end"));
    ckEvery_->setPrefix(tr("every "));
    setUnits(ckEvery_, tr(" epoch"), tr(" epochs"));
    ck->addRow(tr("Save"), ckEvery_);
    connect(ckEvery_, &QSpinBox::valueChanged, this, [this](int v) {
        commit([v](spec::TrainSpec& t) { t.checkpoints.every_epochs = v; },
               v == 0 ? tr("Save checkpoints only at the end")
                      : tr("Save a checkpoint every %1 epochs").arg(v),
               QStringLiteral("train.ck.every"));
    });
    ckKeepLast_ = intSpin(QStringLiteral("checkpointKeepLast"), 1, 1000000,
                          tr("Periodic checkpoints kept; older ones are deleted."), settings_);
    ckKeepLast_->setSuffix(tr(" most recent"));
    ck->addRow(tr("Keep"), ckKeepLast_);
    connect(ckKeepLast_, &QSpinBox::valueChanged, this, [this](int v) {
        commit([v](spec::TrainSpec& t) { t.checkpoints.keep_last = v; },
               tr("Keep the last %1 checkpoints").arg(v), QStringLiteral("train.ck.keepLast"));
    });
    ckKeepBest_ = new QCheckBox(tr("by the early-stopping metric"), settings_);
    ckKeepBest_->setObjectName(QStringLiteral("checkpointKeepBest"));
    ckKeepBest_->setToolTip(tr("Also keep the checkpoint with the best value of the "
                               "early-stopping metric (best.safetensors)."));
    ck->addRow(tr("Keep best"), ckKeepBest_);
    connect(ckKeepBest_, &QCheckBox::toggled, this, [this](bool on) {
        commit([on](spec::TrainSpec& t) { t.checkpoints.keep_best = on; },
               on ? tr("Keep the best checkpoint") : tr("Do not keep the best checkpoint"));
    });

    // --- Capture -------------------------------------------------------------------------------
    QFormLayout* cap = section(tr("Capture"));
    capNorms_ = new QCheckBox(settings_);
    capNorms_->setObjectName(QStringLiteral("captureLayerNorms"));
    capNorms_->setToolTip(tr("Record each layer's gradient norm, weight norm and update/weight "
                             "ratio."));
    capNormsEvery_ = intSpin(QStringLiteral("captureLayerNormsEvery"), 1, INT_MAX,
                             tr("Record layer norms every N optimizer steps."), settings_);
    capNormsEvery_->setPrefix(tr("every "));
    setUnits(capNormsEvery_, tr(" step"), tr(" steps"));
    auto* normsLine = new QHBoxLayout;
    normsLine->setSpacing(8);
    normsLine->addWidget(capNorms_);
    normsLine->addWidget(capNormsEvery_, 1);
    cap->addRow(tr("Layer norms"), normsLine);
    connect(capNorms_, &QCheckBox::toggled, this, [this](bool on) {
        commit([on](spec::TrainSpec& t) { t.capture.layer_norms = on; },
               on ? tr("Capture layer norms") : tr("Stop capturing layer norms"));
    });
    connect(capNormsEvery_, &QSpinBox::valueChanged, this, [this](int v) {
        commit([v](spec::TrainSpec& t) { t.capture.layer_norms_every = v; },
               tr("Capture layer norms every %1 steps").arg(v),
               QStringLiteral("train.cap.normsEvery"));
    });

    auto offOrEvery = [&](QSpinBox*& spin, const QString& name, const QString& label,
                          const QString& tip, int64_t spec::CaptureSpec::*field,
                          const QString& what) {
        spin = intSpin(name, 0, INT_MAX, tip, settings_);
        spin->setSpecialValueText(tr("off"));
        spin->setPrefix(tr("every "));
        setUnits(spin, tr(" step"), tr(" steps"));
        cap->addRow(label, spin);
        connect(spin, &QSpinBox::valueChanged, this, [this, field, what, name](int v) {
            commit([&](spec::TrainSpec& t) { t.capture.*field = v; },
                   v == 0 ? tr("Stop capturing %1").arg(what)
                          : tr("Capture %1 every %2 steps").arg(what).arg(v),
                   QStringLiteral("train.") + name);
        });
    };
    offOrEvery(capSummaries_, QStringLiteral("captureSummariesEvery"), tr("Summaries"),
               tr("Activation and gradient statistics and histograms of every captured layer "
                  "(0: off)."),
               &spec::CaptureSpec::summaries_every, tr("summaries"));
    offOrEvery(capFeatureMaps_, QStringLiteral("captureFeatureMapsEvery"), tr("Feature maps"),
               tr("Activations of one fixed validation sample (0: off)."),
               &spec::CaptureSpec::feature_maps_every, tr("feature maps"));

    capLayers_ = new QLineEdit(settings_);
    capLayers_->setObjectName(QStringLiteral("captureLayers"));
    capLayers_->setPlaceholderText(tr("every layer"));
    capLayersError_ = fieldMessage(QStringLiteral("captureLayersError"), "fieldError", settings_);
    cap->addRow(tr("Layers"), withMessage(capLayers_, capLayersError_));
    connect(capLayers_, &QLineEdit::editingFinished, this, &TrainingPage::commitCaptureLayers);

    column->addStretch(1);
    for (QFormLayout* form : forms)
        alignLabels(form);
    return settings_;
}

void TrainingPage::buildComponent(Component& c, QFormLayout* form, const QString& name) {
    c.kind = new QComboBox(settings_);
    c.kind->setObjectName(name + QStringLiteral("Kind"));
    if (c.optional) {
        c.kind->addItem(tr("None"), QString());
        c.kind->setItemData(0, tr("A constant learning rate."), Qt::ToolTipRole);
    }
    for (const spec::ComponentKind* kindPtr : spec::kinds_of(c.family)) {
        const spec::ComponentKind& kind = *kindPtr;
        c.kind->addItem(QString::fromStdString(kind.name), QString::fromStdString(kind.name));
        c.kind->setItemData(c.kind->count() - 1, QString::fromStdString(kind.doc), Qt::ToolTipRole);
    }
    c.kind->setMaxVisibleItems(20);
    form->addRow(tr("Kind"), c.kind);
    c.doc = noteLabel(name + QStringLiteral("Doc"), settings_);
    c.doc->setProperty("class", QStringLiteral("componentDoc"));
    form->addRow(QString(), c.doc);
    c.container = new QWidget(settings_);
    c.container->setObjectName(name + QStringLiteral("Options"));
    auto* box = new QVBoxLayout(c.container);
    box->setContentsMargins(0, 0, 0, 0);
    form->addRow(c.container);
    Component* component = &c;
    connect(c.kind, &QComboBox::currentIndexChanged, this,
            [this, component] { commitKind(*component); });
}

void TrainingPage::rebuildOptions(Component& c, const std::optional<spec::Choice>& choice) {
    // Detached at once (tests and findChild see only the new form), deleted later: a signal of
    // one of its editors may be on the stack.
    if (c.form != nullptr) {
        for (QObject* child : c.form->findChildren<QObject*>())
            disconnect(child, nullptr, this, nullptr);
        c.form->hide();
        c.form->setParent(nullptr);
        c.form->deleteLater();
        c.form = nullptr;
    }
    c.rows.clear();
    c.built = true;
    c.shownKind = choice ? choice->kind : std::string();
    const spec::ComponentKind* kind =
        choice ? spec::find_component(c.family, choice->kind) : nullptr;
    c.form = new QWidget(c.container);
    QFormLayout* form = makeForm(c.form);
    form->setContentsMargins(0, 0, 0, 0);
    if (kind != nullptr && !kind->options.empty()) {
        Component* component = &c;
        c.rows.build(kind->options, form, c.form, this,
                     [this, component](const AttrRow& row, const graph::AttrValue& value) {
                         commitOption(*component, row, value);
                     });
    }
    alignLabels(form);
    c.container->layout()->addWidget(c.form);
    c.container->setVisible(kind != nullptr && !kind->options.empty());
}

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
    QColor fill = colors::kAccent;
    fill.setAlpha(28);
    graph->setBrush(fill);
    graph->setAntialiased(true);
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

// --- showing the document ------------------------------------------------------------------------

void TrainingPage::refresh() {
    const bool open = document_->isOpen();
    const spec::TrainSpec t = open ? document_->project().train : spec::TrainSpec{};
    refusedError_.clear();

    for (Component* c : {&loss_, &optimizer_, &scheduler_}) {
        const std::optional<spec::Choice> choice = c->get(t);
        const QString kind = choice ? QString::fromStdString(choice->kind) : QString();
        showIndexOfData(c->kind, kind);
        const spec::ComponentKind* desc =
            choice ? spec::find_component(c->family, choice->kind) : nullptr;
        const QString doc = desc != nullptr ? QString::fromStdString(desc->doc)
                                            : tr("A constant learning rate: the optimizer's lr.");
        c->doc->setText(doc);
        c->kind->setToolTip(doc);
        if (!c->built || c->shownKind != kind.toStdString()) rebuildOptions(*c, choice);
        c->rows.show(choice ? choice->options : graph::Attrs{});
    }
    const bool plateau = t.scheduler && spec::schedule_is_metric_driven(t.scheduler->kind);
    showIndexOfData(interval_, QString::fromStdString(t.scheduler_interval));
    showIndexOfData(precision_, QString::fromStdString(t.precision));
    scheduleForm_->setRowVisible(plateauMetricLabel_, plateau);

    showInt(epochs_, t.epochs);
    showInt(accumulation_, t.accumulation_steps);
    auto showClip = [](QCheckBox* box, QDoubleSpinBox* spin, std::optional<double> v) {
        const QSignalBlocker b1(box), b2(spin);
        box->setChecked(v.has_value());
        if (v) spin->setValue(*v); // otherwise the last value stays, ready for the check box
    };
    showClip(clipNormEnabled_, clipNorm_, t.clip_grad_norm);
    showClip(clipValueEnabled_, clipValue_, t.clip_grad_value);
    {
        const QSignalBlocker b(seed_);
        seed_->setText(QString::number(t.seed));
        showFieldError(seedError_, seed_, QString());
    }
    showInt(validateEvery_, t.validate_every_steps);
    showInt(threads_, t.threads);

    {
        const QSignalBlocker b(esEnabled_);
        esEnabled_->setChecked(t.early_stopping.enabled);
    }
    showIndexOfData(esMode_, QString::fromStdString(t.early_stopping.mode));
    showInt(esPatience_, t.early_stopping.patience);
    {
        const QSignalBlocker b(esMinDelta_);
        esMinDelta_->setValue(t.early_stopping.min_delta);
    }
    showInt(ckEvery_, t.checkpoints.every_epochs);
    showInt(ckKeepLast_, t.checkpoints.keep_last);
    {
        const QSignalBlocker b(ckKeepBest_);
        ckKeepBest_->setChecked(t.checkpoints.keep_best);
    }
    {
        const QSignalBlocker b(capNorms_);
        capNorms_->setChecked(t.capture.layer_norms);
    }
    showInt(capNormsEvery_, t.capture.layer_norms_every);
    showInt(capSummaries_, t.capture.summaries_every);
    showInt(capFeatureMaps_, t.capture.feature_maps_every);

    // Layer names: the modules the model builds; a saved name the model no longer has is shown.
    QStringList modules, missing;
    for (const graph::NodeInfo& info : document_->analysis().nodes)
        if (!info.module_name.empty()) modules << QString::fromStdString(info.module_name);
    QStringList layers;
    for (const std::string& name : t.capture.layers) {
        layers << QString::fromStdString(name);
        if (!modules.contains(layers.back())) missing << layers.back();
    }
    {
        const QSignalBlocker b(capLayers_);
        capLayers_->setText(layers.join(QStringLiteral(", ")));
    }
    capLayers_->setToolTip(
        tr("Comma-separated module names to capture (empty: every layer). "
           "This model's layers: %1")
            .arg(modules.isEmpty() ? tr("none") : modules.join(QStringLiteral(", "))));
    showFieldError(
        capLayersError_, capLayers_,
        missing.isEmpty()
            ? QString()
            : tr("The model has no layer named %1.").arg(missing.join(QStringLiteral(", "))));

    refreshMetricCombos(t);
    updateEnabled();
    updatePreview();
    updateOverview();
}

QStringList TrainingPage::availableMetrics() const {
    if (!document_->isOpen()) return {};
    const io::Project& p = document_->project();
    const bool classification = spec::loss_takes_class_indices(p.train.loss.kind);
    // The class count is the model's output width: top-5 accuracy exists from 5 classes on.
    int64_t classes = 0;
    const graph::Analysis& analysis = document_->analysis();
    for (size_t i = 0; i < p.model.nodes.size() && i < analysis.nodes.size(); ++i)
        if (p.model.nodes[i].kind == "Output" && analysis.nodes[i].output &&
            analysis.nodes[i].output->shape.size() == 2)
            classes = analysis.nodes[i].output->shape[1];
    QStringList metrics;
    for (const train::MetricInfo& m :
         train::epoch_metrics(classification, classes, p.data.validation_fraction > 0))
        metrics << QString::fromStdString(m.name);
    return metrics;
}

void TrainingPage::refreshMetricCombos(const spec::TrainSpec& t) {
    const QStringList available = availableMetrics();
    const bool hasValidation =
        document_->isOpen() && document_->project().data.validation_fraction > 0;
    auto fill = [&](QComboBox* combo, QLabel* warning, const std::string& current, bool used) {
        const QSignalBlocker blocker(combo);
        combo->clear();
        combo->addItems(available);
        const QString name = QString::fromStdString(current);
        if (!available.contains(name)) combo->addItem(name);
        combo->setCurrentText(name);
        QString why;
        if (used && document_->isOpen() && !available.contains(name))
            why = name.startsWith(QLatin1String("val_")) && !hasValidation
                      ? tr("Not recorded: the data has no validation split (Data page).")
                      : tr("Not recorded with this loss and model: choose one of the list.");
        warning->setText(why);
        warning->setVisible(!why.isEmpty());
    };
    const bool plateau = t.scheduler && spec::schedule_is_metric_driven(t.scheduler->kind);
    fill(plateauMetric_, plateauMetricWarning_, t.plateau_metric, plateau);
    fill(esMetric_, esMetricWarning_, t.early_stopping.metric,
         t.early_stopping.enabled || t.checkpoints.keep_best);
}

void TrainingPage::updateEnabled() {
    const bool open = document_->isOpen();
    settings_->setEnabled(open && !locked_);
    if (!open)
        banner_->setText(tr("No project is open. Open or create one to choose its loss, "
                            "optimizer and schedule."));
    else if (locked_)
        banner_->setText(lockReason_.isEmpty() ? tr("Training is running: settings are locked.")
                                               : lockReason_);
    banner_->setVisible(!open || locked_);

    const spec::TrainSpec t = open ? document_->project().train : spec::TrainSpec{};
    const bool plateau = t.scheduler && spec::schedule_is_metric_driven(t.scheduler->kind);
    interval_->setEnabled(t.scheduler.has_value() && !plateau);
    interval_->setToolTip(
        plateau ? tr("ReduceLROnPlateau steps once per epoch, on the metric.")
        : !t.scheduler
            ? tr("No schedule: the learning rate stays constant.")
            : tr("When the scheduler steps: after every epoch, or after every optimizer step "
                 "(warmup, T_max, step_size... count these steps)."));
    clipNorm_->setEnabled(clipNormEnabled_->isChecked());
    clipValue_->setEnabled(clipValueEnabled_->isChecked());
    esPatience_->setEnabled(t.early_stopping.enabled);
    esMinDelta_->setEnabled(t.early_stopping.enabled);
    // The metric and mode also choose the best checkpoint.
    esMetric_->setEnabled(t.early_stopping.enabled || t.checkpoints.keep_best);
    esMode_->setEnabled(t.early_stopping.enabled || t.checkpoints.keep_best);
    capNormsEvery_->setEnabled(t.capture.layer_norms);
}

void TrainingPage::setEditingLocked(bool locked, const QString& reason) {
    locked_ = locked;
    lockReason_ = reason;
    updateEnabled();
}

// --- the preview ---------------------------------------------------------------------------------

std::optional<int64_t> TrainingPage::knownStepsPerEpoch() const {
    if (!document_->isOpen()) return std::nullopt;
    return train::known_steps_per_epoch(document_->project().data,
                                        document_->project().train.accumulation_steps);
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
        train::make_loss(t.loss);
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
    int64_t stride = 1;
    int64_t total = 0;
    double startLr = 0;
    const bool open = document_->isOpen();
    const spec::TrainSpec t = open ? document_->project().train : spec::TrainSpec{};
    if (open) {
        plateau = t.scheduler && spec::schedule_is_metric_driven(t.scheduler->kind);
        perStep = train::schedules_per_step(t);
        total = previewSteps(t);
        stride = (total + kMaxPreviewPoints - 1) / kMaxPreviewPoints;
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
                for (int64_t s = 0; s < total; s += stride) {
                    previewX_.push_back(double(s + 1));
                    previewLr_.push_back(startLr);
                }
            } else {
                // A long run is drawn at every stride-th step of the same closed-form schedule.
                previewLr_ = train::preview_lr(t.optimizer, *t.scheduler, total, stride);
                for (size_t i = 0; i < previewLr_.size(); ++i)
                    previewX_.push_back(double(int64_t(i) * stride + 1));
                if (stride > 1)
                    note = tr("%1 steps: drawn at one step in %2.").arg(count(total)).arg(stride);
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
                .arg(QString::fromStdString(t.plateau_metric).toHtmlEscaped(), number(startLr));
    } else if (!previewLr_.empty()) {
        const auto [lo, hi] = std::minmax_element(previewLr_.begin(), previewLr_.end());
        if (!t.scheduler)
            summary = tr("Constant learning rate <b>%1</b> (%2, no schedule) for %3 %4.")
                          .arg(number(startLr), QString::fromStdString(t.optimizer.kind))
                          .arg(count(total))
                          .arg(unit);
        else
            summary = tr("<b>%1</b> over %2 %3: from %4 to %5 (lowest %6, highest %7).")
                          .arg(QString::fromStdString(t.scheduler->kind))
                          .arg(count(total))
                          .arg(unit, number(previewLr_.front()), number(previewLr_.back()),
                               number(*lo), number(*hi));
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
        steps = tr("x: optimizer steps, %1 per epoch (%2 Fashion-MNIST training images after the "
                   "validation split in batches of %3%4) × %5 epochs.")
                    .arg(count(*known), count(train::known_training_examples(d).value_or(0)))
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
                         .arg(number(startLr), number(o.get_float("factor")),
                              QString::fromStdString(t.plateau_metric).toHtmlEscaped(),
                              QString::fromStdString(o.get_string("mode")),
                              number(o.get_float("threshold")),
                              QString::fromStdString(o.get_string("threshold_mode")))
                         .arg(o.get_int("patience"))
                         .arg(o.get_int("cooldown"))
                         .arg(number(o.get_float("min_lr")));
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
                       .arg(count(int64_t(previewX_[i])))
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

void TrainingPage::updateOverview() {
    if (!document_->isOpen()) {
        overview_->setText(tr("—"));
        return;
    }
    const io::Project& p = document_->project();
    const spec::TrainSpec& t = p.train;
    const std::optional<int64_t> known = knownStepsPerEpoch();
    auto row = [](const QString& key, const QString& value) {
        return QStringLiteral("<tr><td style='color:#52606D; padding:2px 14px 2px 0'>%1</td>"
                              "<td style='padding:2px 0'>%2</td></tr>")
            .arg(key, value);
    };
    QString html = QStringLiteral("<table cellspacing='0'>");
    html += row(tr("Effective batch"), tr("%1 examples per optimizer step (batch %2 × %3)")
                                           .arg(count(p.data.batch_size * t.accumulation_steps))
                                           .arg(p.data.batch_size)
                                           .arg(t.accumulation_steps));
    if (known)
        html += row(tr("Optimizer steps"),
                    tr("%1 per epoch, %2 in total").arg(count(*known), count(*known * t.epochs)));
    else
        html += row(tr("Optimizer steps"),
                    tr("depend on the data's size (known when training starts)"));
    if (p.data.validation_fraction > 0)
        html += row(tr("Validation"),
                    t.validate_every_steps > 0
                        ? tr("%1% of the training data, every %2 steps and after every epoch")
                              .arg(p.data.validation_fraction * 100)
                              .arg(count(t.validate_every_steps))
                        : tr("%1% of the training data, after every epoch")
                              .arg(p.data.validation_fraction * 100));
    else
        html += row(tr("Validation"), tr("none (no validation split on the Data page)"));
    QString ck = t.checkpoints.every_epochs == 1 ? tr("after every epoch")
                 : t.checkpoints.every_epochs > 1
                     ? tr("every %1 epochs and at the end").arg(t.checkpoints.every_epochs)
                     : tr("at the end (and when stopped)");
    ck += t.checkpoints.keep_last == 1 ? tr(", keeping the last one")
                                       : tr(", keeping the last %1").arg(t.checkpoints.keep_last);
    if (t.checkpoints.keep_best)
        ck += tr(", plus the best by %1")
                  .arg(QString::fromStdString(t.early_stopping.metric).toHtmlEscaped());
    html += row(tr("Checkpoints"), ck);
    if (t.early_stopping.enabled)
        html += row(tr("Early stopping"),
                    tr("after %1 epochs without %2 improving by more than %3 (%4)")
                        .arg(t.early_stopping.patience)
                        .arg(QString::fromStdString(t.early_stopping.metric).toHtmlEscaped(),
                             number(t.early_stopping.min_delta),
                             QString::fromStdString(t.early_stopping.mode)));
    QStringList capture;
    auto times = [&](int64_t every) {
        return known ? tr(" (%1 times)").arg(count(*known * t.epochs / every)) : QString();
    };
    if (t.capture.layer_norms)
        capture << (t.capture.layer_norms_every == 1
                        ? tr("layer norms every step")
                        : tr("layer norms every %1 steps").arg(t.capture.layer_norms_every));
    if (t.capture.summaries_every > 0)
        capture << tr("summaries every %1 steps%2")
                       .arg(t.capture.summaries_every)
                       .arg(times(t.capture.summaries_every));
    if (t.capture.feature_maps_every > 0)
        capture << tr("feature maps every %1 steps%2")
                       .arg(t.capture.feature_maps_every)
                       .arg(times(t.capture.feature_maps_every));
    html +=
        row(tr("Capture"), capture.isEmpty() ? tr("nothing") : capture.join(QStringLiteral("; ")));
    html += QStringLiteral("</table>");
    overview_->setText(html);
}

// --- committing
// ------------------------------------------------------------------------------------

bool TrainingPage::commit(const std::function<void(spec::TrainSpec&)>& change, const QString& text,
                          const QString& mergeKey, const AttrRow* field) {
    if (!document_->isOpen() || locked_) return false;
    const spec::TrainSpec& current = document_->project().train;
    spec::TrainSpec after = current;
    change(after);
    if (after == current) {
        // Back to the project's value: a refused edit's message no longer applies.
        if (!refusedError_.isEmpty()) {
            refusedError_.clear();
            updatePreview();
        }
        return true;
    }
    const QString why = buildError(after);
    if (!why.isEmpty() && buildError(current).isEmpty()) {
        refusedError_ = tr("Not applied: %1").arg(why);
        if (field != nullptr) showFieldError(field->error, field->editor, why);
        updatePreview();
        return false;
    }
    refusedError_.clear();
    document_->applyTrainEdit(after, text, mergeKey);
    return true;
}

void TrainingPage::commitKind(Component& c) {
    if (!document_->isOpen() || locked_) return;
    const QString name = c.kind->currentData().toString();
    std::optional<spec::Choice> choice;
    if (!name.isEmpty()) {
        const spec::ComponentKind* kind = spec::find_component(c.family, name.toStdString());
        if (kind == nullptr) return;
        choice = spec::Choice{kind->name, graph::with_defaults(kind->options, {})};
    }
    const std::optional<spec::Choice> current = c.get(document_->project().train);
    if ((current ? current->kind : std::string()) == (choice ? choice->kind : std::string()))
        return;
    // A new kind starts from its defaults. It is committed even when core rejects it with the
    // other settings (the reason shows under the plot), so the next edit can make it fit.
    spec::TrainSpec after = document_->project().train;
    c.set(after, choice);
    refusedError_.clear();
    document_->applyTrainEdit(after, choice ? tr("Change %1 to %2").arg(c.what, name)
                                            : tr("Remove the %1").arg(c.what));
}

void TrainingPage::commitOption(Component& c, const AttrRow& row, const graph::AttrValue& value) {
    const std::optional<spec::Choice> current = c.get(document_->project().train);
    if (!current) return;
    const graph::AttrValue* existing = current->options.find(row.desc.name);
    const std::string name = row.desc.name;
    commit(
        [&](spec::TrainSpec& t) {
            std::optional<spec::Choice> choice = c.get(t);
            if (existing == nullptr && value == row.desc.default_value) return; // already so
            choice->options.set(name, value);
            c.set(t, std::move(choice));
        },
        tr("Change %1 %2 to %3").arg(c.what, QString::fromStdString(name), attrValueText(value)),
        QStringLiteral("train.%1.%2").arg(c.kind->objectName(), QString::fromStdString(name)),
        &row);
}

void TrainingPage::commitSeed() {
    const QString text = seed_->text().trimmed();
    bool ok = false;
    const qulonglong seed = text.toULongLong(&ok);
    if (!ok || seed > qulonglong(std::numeric_limits<int64_t>::max())) {
        showFieldError(
            seedError_, seed_,
            tr("Enter a whole number from 0 to %1.").arg(std::numeric_limits<int64_t>::max()));
        return;
    }
    showFieldError(seedError_, seed_, QString());
    commit([seed](spec::TrainSpec& t) { t.seed = seed; }, tr("Change seed to %1").arg(seed),
           QStringLiteral("train.seed"));
}

void TrainingPage::commitCaptureLayers() {
    QStringList modules;
    for (const graph::NodeInfo& info : document_->analysis().nodes)
        if (!info.module_name.empty()) modules << QString::fromStdString(info.module_name);
    static const QRegularExpression separators(QStringLiteral("[,\\s]+"));
    const QStringList names = capLayers_->text().split(separators, Qt::SkipEmptyParts);
    QStringList unknown;
    std::vector<std::string> layers;
    for (const QString& name : names) {
        if (!modules.contains(name)) unknown << name;
        if (std::find(layers.begin(), layers.end(), name.toStdString()) == layers.end())
            layers.push_back(name.toStdString());
    }
    if (!unknown.isEmpty()) {
        showFieldError(
            capLayersError_, capLayers_,
            tr("The model has no layer named %1 (its layers: %2).")
                .arg(unknown.join(QStringLiteral(", ")), modules.join(QStringLiteral(", "))));
        return;
    }
    showFieldError(capLayersError_, capLayers_, QString());
    commit([&](spec::TrainSpec& t) { t.capture.layers = layers; },
           layers.empty() ? tr("Capture every layer")
                          : tr("Capture layers %1").arg(names.join(QStringLiteral(", "))));
}

} // namespace myelin::ui
