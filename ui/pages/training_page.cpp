// The Training page itself: its construction, showing the document's TrainSpec (refresh), what
// is enabled, the run overview and committing edits. The settings column is built in
// training_page_settings.cpp, the learning-rate preview in training_page_lr_preview.cpp.
#include "pages/training_page.h"

#include "widgets/device_picker.h"

#include "document/project_document.h"
#include "pages/class_weights_editor.h"
#include "pages/page_text.h"
#include "pages/training_page_form.h"
#include "widgets/theme.h"
#include "widgets/wheel_guard.h"

#include <myelin/graph/analysis.h>
#include <myelin/train/metrics.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSettings>
#include <QShowEvent>
#include <QSpinBox>
#include <QThread>
#include <QVBoxLayout>

#include <algorithm>
#include <limits>

namespace myelin::ui {

using namespace training_form;

namespace {

constexpr int kSettingsWidth = 450;
void showInt(QSpinBox* spin, int64_t value) {
    const QSignalBlocker blocker(spin);
    spin->setValue(int(std::clamp<int64_t>(value, spin->minimum(), spin->maximum())));
    updateUnit(spin);
}

void showIndexOfData(QComboBox* combo, const QString& data) {
    const QSignalBlocker blocker(combo);
    combo->setCurrentIndex(combo->findData(data));
}

} // namespace

TrainingPage::TrainingPage(ProjectDocument* document, QWidget* parent)
    : QWidget(parent), document_(document) {
    setObjectName(QStringLiteral("trainingPage"));
    installWheelGuard(); // the wheel scrolls this form; it edits an input only once focused
    setAttribute(Qt::WA_StyledBackground, true);

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

    classCounts_ = new ClassCountsLoader(this);
    buildUi();
    buildProcessesRow();
    // Once the classes are known, class weights by name are checked against them.
    connect(classCounts_, &ClassCountsLoader::changed, this, &TrainingPage::updatePreview);

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
    refreshClassWeights(t);
    const bool plateau = t.scheduler && spec::schedule_is_metric_driven(t.scheduler->kind);
    showIndexOfData(interval_, word(t.scheduler_interval));
    showIndexOfData(precision_, word(t.precision));
    {
        const QSignalBlocker b(flushDenormal_), d(deterministic_), f(allowTf32_);
        flushDenormal_->setChecked(t.flush_denormal);
        deterministic_->setChecked(t.deterministic);
        allowTf32_->setChecked(t.allow_tf32);
    }
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
        const QSignalBlocker b(initWeights_);
        initWeights_->setText(QString::fromStdString(t.init_weights));
    }
    {
        const QSignalBlocker b(seed_);
        seed_->setText(QString::number(t.seed));
        showFieldError(seedError_, seed_, QString());
    }
    showInt(validateEvery_, t.validate_every_steps);
    showInt(threads_, t.threads);
    device_->setDevice(QString::fromStdString(t.device));

    {
        const QSignalBlocker b(esEnabled_);
        esEnabled_->setChecked(t.early_stopping.enabled);
    }
    showIndexOfData(esMode_, word(t.early_stopping.mode));
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

void TrainingPage::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (document_->isOpen()) refreshClassWeights(document_->project().train);
}

void TrainingPage::refreshClassWeights(const spec::TrainSpec& t) {
    if (classWeights_ == nullptr) return;
    // The classes (and the training split's counts) of the chosen data, read once per data spec
    // and only while the page is shown: reading Fashion-MNIST takes a moment.
    if (isVisible())
        classCounts_->request(document_->project().data, document_->dataDirectory().toStdString(),
                              t.seed);
    const graph::AttrValue* value = t.loss.options.find(classWeightsOption_);
    const auto* table = value != nullptr ? std::get_if<graph::NumberTable>(value) : nullptr;
    classWeights_->showTable(table != nullptr ? *table : graph::NumberTable{});
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

void TrainingPage::updateOverview() {
    if (!document_->isOpen()) {
        overview_->setText(tr("—"));
        return;
    }
    const io::Project& p = document_->project();
    const spec::TrainSpec& t = p.train;
    const std::optional<int64_t> known = knownStepsPerEpoch();
    auto row = [](const QString& key, const QString& value) {
        return QStringLiteral("<tr><td style='color:%1; padding:2px 14px 2px 0'>%2</td>"
                              "<td style='padding:2px 0'>%3</td></tr>")
            .arg(colors::kMutedText.name(), key, value);
    };
    QString html = QStringLiteral("<table cellspacing='0'>");
    const int ranks = processes(); // data-parallel: each process takes its own batch
    const int64_t perStep = p.data.batch_size * t.accumulation_steps * ranks;
    html += row(tr("Effective batch"),
                ranks > 1 ? tr("%1 examples per optimizer step (batch %2 × %3 × %4 processes)")
                                .arg(groupDigits(perStep))
                                .arg(p.data.batch_size)
                                .arg(t.accumulation_steps)
                                .arg(ranks)
                          : tr("%1 examples per optimizer step (batch %2 × %3)")
                                .arg(groupDigits(perStep))
                                .arg(p.data.batch_size)
                                .arg(t.accumulation_steps));
    if (known && ranks > 1) // each process reads its share of the examples
        html +=
            row(tr("Optimizer steps"), tr("%1 per epoch, %2 in total, in each of %3 processes")
                                           .arg(groupDigits(*known), groupDigits(*known * t.epochs))
                                           .arg(ranks));
    else if (known)
        html += row(tr("Optimizer steps"),
                    tr("%1 per epoch, %2 in total")
                        .arg(groupDigits(*known), groupDigits(*known * t.epochs)));
    else
        html += row(tr("Optimizer steps"),
                    tr("depend on the data's size (known when training starts)"));
    if (p.data.validation_fraction > 0)
        html += row(tr("Validation"),
                    t.validate_every_steps > 0
                        ? tr("%1% of the training data, every %2 steps and after every epoch")
                              .arg(p.data.validation_fraction * 100)
                              .arg(groupDigits(t.validate_every_steps))
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
                             numberText(t.early_stopping.min_delta), word(t.early_stopping.mode)));
    QStringList capture;
    auto times = [&](int64_t every) {
        return known ? tr(" (%1 times)").arg(groupDigits(*known * t.epochs / every)) : QString();
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

// --- processes on this machine -------------------------------------------------------------------

namespace {
const QString kProcessesKey = QStringLiteral("training/processes");
}

// Below Threads in the Run section; hidden until the shell says a multi-process run can start.
void TrainingPage::buildProcessesRow() {
    auto* row = new QWidget(settings_);
    row->setObjectName(QStringLiteral("processesRow"));
    processes_ = intSpin(QStringLiteral("trainProcesses"), 1, 1,
                         tr("Train data-parallel in this many processes on this machine "
                            "(mpirun and the myelin command-line tool), the threads split "
                            "between them; 1 trains in the studio."),
                         row);
    processesNote_ = noteLabel(QStringLiteral("processesNote"), row);
    processesNote_->setProperty("class", QStringLiteral("componentDoc"));
    auto* layout = new QVBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(processes_);
    layout->addWidget(processesNote_);
    for (QFormLayout* form : settings_->findChildren<QFormLayout*>()) {
        int at = -1;
        QFormLayout::ItemRole role;
        form->getWidgetPosition(threads_, &at, &role);
        if (at < 0) continue;
        form->insertRow(at + 1, tr("Processes"), row);
        form->setRowVisible(row, false);
        break;
    }
    connect(processes_, &QSpinBox::valueChanged, this, [this](int n) {
        QSettings().setValue(kProcessesKey, n);
        updateProcessesNote();
        updatePreview(); // steps per epoch depend on the process count
        updateOverview();
    });
    connect(threads_, &QSpinBox::valueChanged, this, [this] { updateProcessesNote(); });
    updateProcessesNote();
}

void TrainingPage::setProcessesAvailable(bool available, int maxProcesses) {
    processesAvailable_ = available;
    {
        const QSignalBlocker blocker(processes_);
        processes_->setMaximum(std::max(1, maxProcesses));
        processes_->setValue(available ? QSettings().value(kProcessesKey, 1).toInt() : 1);
    }
    updatePreview();
    updateOverview();
    for (QFormLayout* form : settings_->findChildren<QFormLayout*>()) {
        int at = -1;
        QFormLayout::ItemRole role;
        form->getWidgetPosition(processes_->parentWidget(), &at, &role);
        if (at >= 0) form->setRowVisible(at, available);
    }
    updateProcessesNote();
}

int TrainingPage::processes() const {
    return processesAvailable_ ? processes_->value() : 1;
}

void TrainingPage::updateProcessesNote() {
    const int n = processes_->value();
    if (n <= 1) {
        processesNote_->setText(tr("On this machine. 1 trains in the studio; more train "
                                   "data-parallel in that many processes (mpirun)."));
        return;
    }
    const int total = threads_->value() > 0 ? threads_->value() : QThread::idealThreadCount();
    const int each = std::max(1, total / n);
    processesNote_->setText(
        each == 1
            ? tr("On this machine, data-parallel with mpirun: %1 processes, 1 thread each.").arg(n)
            : tr("On this machine, data-parallel with mpirun: %1 processes, %2 threads each.")
                  .arg(n)
                  .arg(each));
}

} // namespace myelin::ui
