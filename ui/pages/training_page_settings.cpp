// The Training page's settings column (loss, optimizer, schedule, run, early stopping,
// checkpoints, capture), built one section per member function, the options forms of the three
// component choices, and the form helpers the page's files share (training_page_form.h).
#include "pages/training_page.h"

#include "document/project_document.h"
#include "pages/class_weights_editor.h"
#include "pages/lr_finder_dialog.h"
#include "pages/page_text.h"
#include "pages/training_page_form.h"
#include "widgets/device_picker.h"
#include "widgets/theme.h"
#include "widgets/wrapped_label.h"

#include <myelin/cuda.h>
#include <myelin/error.h>
#include <myelin/train/metrics.h>
#include <myelin/train/trainer.h>

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QRegularExpressionValidator>
#include <QResizeEvent>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include <algorithm>
#include <climits>
#include <vector>

namespace myelin::ui {

namespace training_form {

namespace {

constexpr int kLabelWidth = 150;

} // namespace

QFormLayout* makeForm(QWidget* parent) {
    auto* form = new QFormLayout(parent);
    form->setLabelAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setRowWrapPolicy(QFormLayout::DontWrapRows);
    form->setHorizontalSpacing(12);
    form->setVerticalSpacing(6);
    return form;
}

void alignLabels(QFormLayout* form) {
    for (int r = 0; r < form->rowCount(); ++r)
        if (QLayoutItem* item = form->itemAt(r, QFormLayout::LabelRole))
            if (QWidget* label = item->widget()) label->setMinimumWidth(kLabelWidth);
}

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

} // namespace training_form

using namespace training_form;

namespace {

// float16 trains only on a CUDA device whose autocast has it: greyed, with the reason, where no
// device here can (a project that asks for it still shows it).
void addFloat16Item(QComboBox* precision) {
    precision->addItem(QObject::tr("float16 (mixed, CUDA)"), word(spec::Precision::Float16));
    QString refusal = QObject::tr("float16 needs a CUDA device: %1")
                          .arg(QString::fromStdString(cuda_status().reason));
    for (const GpuInfo& gpu : cuda_status().devices) {
        try {
            check_training_device(cuda_device(gpu.index));
            train::check_precision(spec::Precision::Float16, cuda_device(gpu.index));
            refusal.clear();
            break;
        } catch (const Error& e) {
            refusal = QString::fromStdString(e.what());
        }
    }
    if (refusal.isEmpty()) return;
    const int row = precision->count() - 1;
    precision->setItemData(row, refusal, Qt::ToolTipRole);
    if (auto* model = qobject_cast<QStandardItemModel*>(precision->model()))
        model->item(row)->setEnabled(false);
}

} // namespace

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
    buildComponent(loss_, section(tr("Loss")), QStringLiteral("loss"));
    QFormLayout* optimizer = section(tr("Optimizer"));
    buildComponent(optimizer_, optimizer, QStringLiteral("optimizer"));
    findLr_ = new QPushButton(tr("Find learning rate…"), settings_);
    findLr_->setObjectName(QStringLiteral("findLearningRate"));
    findLr_->setToolTip(tr("A range test: up to 100 steps on a copy of the model with the "
                           "learning rate growing until the loss diverges; suggests a learning "
                           "rate to apply."));
    connect(findLr_, &QPushButton::clicked, this, &TrainingPage::findLearningRate);
    optimizer->addRow(QString(), findLr_);
    buildScheduleSection(section(tr("Schedule")));
    buildRunSection(section(tr("Run")));
    buildEarlyStoppingSection(section(tr("Early stopping")));
    buildCheckpointSection(section(tr("Checkpoints")));
    buildCaptureSection(section(tr("Capture")));
    column->addStretch(1);
    for (QFormLayout* form : forms)
        alignLabels(form);
    return settings_;
}

LrFinderDialog* TrainingPage::lrFinderDialog() const {
    return lrFinder_.data();
}

void TrainingPage::findLearningRate() {
    if (!document_->isOpen() || locked_ || lrFinder_) return;
    const io::Project& project = document_->project();
    double current = 0;
    if (const spec::OptimizerKind* kind =
            spec::find_component(spec::optimizer_kinds(), project.train.optimizer.kind))
        current =
            graph::with_defaults(kind->options, project.train.optimizer.options).get_float("lr");
    auto* dialog = new LrFinderDialog(project, document_->dataDirectory(), current, this);
    dialog->setRecording(storePath_ ? storePath_() : QString(), document_->filePath());
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(dialog, &LrFinderDialog::learningRateChosen, this, [this](double lr) {
        commit([lr](spec::TrainSpec& t) { t.optimizer.options.set("lr", lr); },
               tr("Set the learning rate to %1 (range test)").arg(lr, 0, 'g', 3));
    });
    lrFinder_ = dialog;
    dialog->open();
}

// The schedule's kind and options, when it steps and, for ReduceLROnPlateau, the metric it
// watches.
void TrainingPage::buildScheduleSection(QFormLayout* schedule) {
    buildComponent(scheduler_, schedule, QStringLiteral("scheduler"));

    interval_ = new QComboBox(settings_);
    interval_->setObjectName(QStringLiteral("schedulerInterval"));
    interval_->addItem(tr("once per epoch"), word(spec::ScheduleInterval::Epoch));
    interval_->addItem(tr("every optimizer step"), word(spec::ScheduleInterval::Step));
    interval_->setToolTip(tr("When the scheduler steps: after every epoch, or after every "
                             "optimizer step (warmup, T_max, step_size... count these steps)."));
    // Above the options, which count in these units.
    schedule->insertRow(2, tr("Steps"), interval_);
    connect(interval_, &QComboBox::currentIndexChanged, this, [this] {
        const auto interval = valueOf<spec::ScheduleInterval>(interval_);
        commit([&](spec::TrainSpec& t) { t.scheduler_interval = interval; },
               interval == spec::ScheduleInterval::Step
                   ? tr("Step the LR schedule every optimizer step")
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
}

// Epochs, accumulation, gradient clipping, precision, seed, validation, threads and device.
void TrainingPage::buildRunSection(QFormLayout* run) {
    initWeights_ = new QLineEdit(settings_);
    initWeights_->setObjectName(QStringLiteral("initWeights"));
    initWeights_->setPlaceholderText(tr("none: each layer's own initialisation"));
    initWeights_->setToolTip(
        tr("A safetensors file a fresh run starts from (an imported model's weights, a "
           "checkpoint), relative to the project's folder. A layer whose name is not in it (a "
           "replaced head) keeps its initialisation; a resume or fork starts from its "
           "checkpoint instead."));
    run->addRow(tr("Initial weights"), initWeights_);
    connect(initWeights_, &QLineEdit::editingFinished, this, [this] {
        const std::string path = initWeights_->text().trimmed().toStdString();
        if (path == document_->project().train.init_weights) return;
        commit([path](spec::TrainSpec& t) { t.init_weights = path; },
               path.empty() ? tr("Clear the initial weights")
                            : tr("Start from %1").arg(QString::fromStdString(path)));
    });

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
                on ? tr("Clip gradients by %1 at %2").arg(what, numberText(v))
                   : tr("Stop clipping gradients by %1").arg(what));
        });
        connect(spin, &QDoubleSpinBox::valueChanged, this, [this, b, field, what, name](double v) {
            if (!b->isChecked()) return;
            commit([&](spec::TrainSpec& t) { t.*field = v; },
                   tr("Clip gradients by %1 at %2").arg(what, numberText(v)),
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
    precision_->addItem(QStringLiteral("float32"), word(spec::Precision::Float32));
    precision_->addItem(tr("bfloat16 (mixed)"), word(spec::Precision::BFloat16));
    addFloat16Item(precision_);
    precision_->setToolTip(
        tr("float32: everything in float32. bfloat16: linear layers and convolutions multiply "
           "in bfloat16 (autocast); weights, gradients, optimizer state, normalisations and the "
           "loss stay float32. float16 (CUDA only): the same in float16, with loss scaling."));
    run->addRow(tr("Precision"), precision_);
    connect(precision_, &QComboBox::currentIndexChanged, this, [this] {
        const auto precision = valueOf<spec::Precision>(precision_);
        commit([&](spec::TrainSpec& t) { t.precision = precision; },
               tr("Change precision to %1").arg(word(precision)));
    });

    // A box for one on/off key of the training section, each toggle an undoable edit.
    const auto switchBox = [this](const QString& text, const char* name, const QString& tip,
                                  bool spec::TrainSpec::*field, const QString& onEdit,
                                  const QString& offEdit) {
        auto* box = new QCheckBox(text, settings_);
        box->setObjectName(QLatin1String(name));
        box->setToolTip(tip);
        connect(box, &QCheckBox::toggled, this, [this, field, onEdit, offEdit](bool on) {
            commit([field, on](spec::TrainSpec& t) { t.*field = on; }, on ? onEdit : offEdit);
        });
        return box;
    };
    flushDenormal_ = switchBox(
        tr("flush to zero"), "trainFlushDenormal",
        tr("Treat float values below 1.2e-38 as 0 while training (torch.set_flush_denormal). "
           "Faster once optimizer state decays that far, but results are no longer IEEE-exact "
           "there. Off, as in PyTorch."),
        &spec::TrainSpec::flush_denormal, tr("Flush denormals to zero"),
        tr("Keep denormals (IEEE)"));
    run->addRow(tr("Denormals"), flushDenormal_);

    // A GPU's run-wide numerics (the CPU is always deterministic and has no TF32).
    deterministic_ = switchBox(
        tr("deterministic"), "trainDeterministic",
        tr("On a GPU, only deterministic kernels: running the project again gives bit-identical "
           "losses and weights (cuDNN's deterministic convolution algorithms, gradient "
           "scatters in a fixed order; as torch.use_deterministic_algorithms). Can be slower. "
           "Runs on the CPU are always deterministic."),
        &spec::TrainSpec::deterministic, tr("Use deterministic GPU kernels"),
        tr("Allow any GPU kernel"));
    allowTf32_ = switchBox(
        tr("TF32 math"), "trainAllowTf32",
        tr("On a GPU, float32 matrix products and convolutions on TF32 tensor cores: several "
           "times faster, with about 1e-3 relative error (torch.backends.cuda.matmul."
           "allow_tf32). Off: float32 results as exact as on the CPU."),
        &spec::TrainSpec::allow_tf32, tr("Allow TF32 math on a GPU"),
        tr("Keep float32 math exact on a GPU"));
    auto* gpuLine = new QHBoxLayout;
    gpuLine->setSpacing(12);
    gpuLine->addWidget(deterministic_);
    gpuLine->addWidget(allowTf32_);
    gpuLine->addStretch(1);
    run->addRow(tr("On a GPU"), gpuLine);

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

    device_ = new DevicePicker(settings_);
    run->addRow(tr("Device"), device_);
    connect(device_, &DevicePicker::deviceChosen, this, [this](const QString& device) {
        commit([&](spec::TrainSpec& t) { t.device = device.toStdString(); },
               tr("Train on %1").arg(device));
    });
}

// Whether, on which metric and how patiently training stops early.
void TrainingPage::buildEarlyStoppingSection(QFormLayout* es) {
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
                t.early_stopping.mode = train::higher_is_better(metric.toStdString())
                                            ? spec::MetricMode::Max
                                            : spec::MetricMode::Min;
            },
            tr("Change the early-stopping metric to %1").arg(metric));
    });

    esMode_ = new QComboBox(settings_);
    esMode_->setObjectName(QStringLiteral("earlyStoppingMode"));
    esMode_->addItem(tr("min (lower is better)"), word(spec::MetricMode::Min));
    esMode_->addItem(tr("max (higher is better)"), word(spec::MetricMode::Max));
    es->addRow(tr("Mode"), esMode_);
    connect(esMode_, &QComboBox::currentIndexChanged, this, [this] {
        const auto mode = valueOf<spec::MetricMode>(esMode_);
        commit([&](spec::TrainSpec& t) { t.early_stopping.mode = mode; },
               tr("Change the early-stopping mode to %1").arg(word(mode)));
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
               tr("Change early-stopping min delta to %1").arg(numberText(v)),
               QStringLiteral("train.es.minDelta"));
    });
}

// How often checkpoints are saved and which are kept.
void TrainingPage::buildCheckpointSection(QFormLayout* ck) {
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
}

// What the hooks capture for the inspection views: layer norms, summaries, feature maps and of
// which layers.
void TrainingPage::buildCaptureSection(QFormLayout* cap) {
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
    if (&c == &loss_) {
        classWeights_ = nullptr;
        classWeightsOption_.clear();
    }
    c.built = true;
    c.shownKind = choice ? choice->kind : std::string();
    const spec::ComponentKind* kind =
        choice ? spec::find_component(c.family, choice->kind) : nullptr;
    c.form = new QWidget(c.container);
    QFormLayout* form = makeForm(c.form);
    form->setContentsMargins(0, 0, 0, 0);
    if (kind != nullptr && !kind->options.empty()) {
        // Weights by class name get the class table below instead of a row.
        std::vector<graph::AttrDesc> rowOptions;
        for (const graph::AttrDesc& d : kind->options) {
            if (&c == &loss_ && d.type == graph::AttrType::NumberTable && !d.table_by_position &&
                classWeightsOption_.empty()) {
                classWeightsOption_ = d.name;
                continue;
            }
            rowOptions.push_back(d);
        }
        Component* component = &c;
        c.rows.build(rowOptions, form, c.form, this,
                     [this, component](const AttrRow& row, const graph::AttrValue& value) {
                         commitOption(*component, row, value);
                     });
        if (&c == &loss_ && !classWeightsOption_.empty()) {
            // The whole width of the column: class names need the room.
            classWeights_ = new ClassWeightsEditor(classCounts_, c.form);
            form->addRow(new QLabel(tr("Class weights"), c.form));
            form->addRow(classWeights_);
            const std::string option = classWeightsOption_;
            connect(classWeights_, &ClassWeightsEditor::edited, this,
                    [this, option](const graph::NumberTable& table, const QString& text) {
                        commit([&](spec::TrainSpec& t) { t.loss.options.set(option, table); },
                               text);
                    });
        }
    }
    alignLabels(form);
    c.container->layout()->addWidget(c.form);
    c.container->setVisible(kind != nullptr && !kind->options.empty());
}

} // namespace myelin::ui
