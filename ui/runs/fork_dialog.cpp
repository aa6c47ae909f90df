#include "runs/fork_dialog.h"

#include "inspect/view_frame.h"
#include "widgets/device_picker.h"
#include "widgets/theme.h"

#include <myelin/cuda.h>
#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/spec/components.h>
#include <myelin/store/run_store.h>

#include <qcustomplot.h>

#include <QButtonGroup>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleValidator>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QRadioButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace myelin::ui {

namespace {

constexpr int kLossBuckets = 600;
const QString kNoSchedule = QStringLiteral("(none)");

// The optimizer's learning rate as the project holds it; unset when it has none.
std::optional<double> learningRateOf(const io::Project& project) {
    const graph::AttrValue* lr = project.train.optimizer.options.find("lr");
    if (!lr) {
        const spec::ComponentKind* kind =
            spec::find_component(spec::Family::Optimizer, project.train.optimizer.kind);
        if (!kind) return std::nullopt;
        for (const auto& option : kind->options)
            if (option.name == "lr") return std::get<double>(option.default_value);
        return std::nullopt;
    }
    if (auto* d = std::get_if<double>(lr)) return *d;
    if (auto* i = std::get_if<int64_t>(lr)) return double(*i);
    return std::nullopt;
}

// "from" field of a checkpoint's metadata JSON ("{\"epoch\": 2, \"best\": true}"): a light scan,
// the metadata is ours and flat.
int64_t metadataInteger(const std::string& json, const std::string& key, int64_t missing) {
    const auto at = json.find("\"" + key + "\"");
    if (at == std::string::npos) return missing;
    const auto colon = json.find(':', at);
    if (colon == std::string::npos) return missing;
    return std::strtoll(json.c_str() + colon + 1, nullptr, 10);
}

bool metadataTrue(const std::string& json, const std::string& key) {
    const auto at = json.find("\"" + key + "\"");
    if (at == std::string::npos) return false;
    const auto colon = json.find(':', at);
    return colon != std::string::npos &&
           json.compare(json.find_first_not_of(" ", colon + 1), 4, "true") == 0;
}

} // namespace

ForkDialog::ForkDialog(const QString& storePath, qint64 run, Mode mode, QWidget* parent)
    : QDialog(parent), run_(run) {
    setObjectName(QStringLiteral("forkDialog"));
    setWindowTitle(tr("Resume or fork run %1").arg(run));
    load(storePath);

    auto* layout = new QVBoxLayout(this);
    header_ = new QLabel(this);
    header_->setObjectName(QStringLiteral("forkHeader"));
    header_->setWordWrap(true);
    layout->addWidget(header_);
    problemLabel_ = new QLabel(problem_, this);
    problemLabel_->setObjectName(QStringLiteral("forkProblem"));
    problemLabel_->setWordWrap(true);
    problemLabel_->setVisible(!problem_.isEmpty());
    layout->addWidget(problemLabel_);

    // The run's loss with its checkpoints, and the list of them.
    auto* pick = new QHBoxLayout;
    plot_ = new QCustomPlot(this);
    plot_->setObjectName(QStringLiteral("forkTimeline"));
    plot_->setMinimumSize(420, 220);
    stylePlot(plot_, {plot_->xAxis, plot_->yAxis});
    plot_->xAxis->setLabel(tr("optimizer step"));
    plot_->yAxis->setLabel(tr("training loss"));
    connect(plot_, &QCustomPlot::mousePress, this, [this](QMouseEvent* event) {
        onPlotClicked(plot_->xAxis->pixelToCoord(event->position().x()));
    });
    pick->addWidget(plot_, 3);
    checkpointList_ = new QListWidget(this);
    checkpointList_->setObjectName(QStringLiteral("forkCheckpoints"));
    for (const auto& c : checkpoints_) {
        QString text = tr("step %1").arg(c.step);
        if (c.epoch >= 1) text += tr(" · after epoch %1").arg(c.epoch);
        if (c.best) text += tr(" · best");
        if (!c.missing.isEmpty()) text += QStringLiteral(" — ") + c.missing;
        auto* item = new QListWidgetItem(text, checkpointList_);
        item->setToolTip(c.path);
        if (!c.missing.isEmpty()) item->setFlags(item->flags() & ~Qt::ItemIsEnabled);
    }
    connect(checkpointList_, &QListWidget::currentRowChanged, this,
            &ForkDialog::onCheckpointRowChanged);
    pick->addWidget(checkpointList_, 2);
    layout->addLayout(pick, 3);

    auto* modes = new QHBoxLayout;
    modeGroup_ = new QButtonGroup(this);
    auto* resume = new QRadioButton(tr("Resume this run from the checkpoint"), this);
    resume->setObjectName(QStringLiteral("forkModeResume"));
    auto* fork = new QRadioButton(tr("Fork a new run from the checkpoint"), this);
    fork->setObjectName(QStringLiteral("forkModeFork"));
    modeGroup_->addButton(resume, int(Mode::Resume));
    modeGroup_->addButton(fork, int(Mode::Fork));
    modes->addWidget(resume);
    modes->addWidget(fork);
    modes->addStretch();
    layout->addLayout(modes);

    // The device: the run's, or the CPU when the run's cannot be used on this machine.
    auto* deviceRow = new QHBoxLayout;
    deviceRow->addWidget(new QLabel(tr("Train on:"), this), 0, Qt::AlignTop);
    device_ = new DevicePicker(this);
    deviceRow->addWidget(device_, 1);
    layout->addLayout(deviceRow);
    deviceNote_ = new QLabel(this);
    deviceNote_->setObjectName(QStringLiteral("forkDeviceNote"));
    deviceNote_->setWordWrap(true);
    deviceNote_->hide();
    layout->addWidget(deviceNote_);
    if (base_) {
        const QString recorded = QString::fromStdString(
            base_->train.device.empty() ? std::string("cpu") : base_->train.device);
        device_->setDevice(recorded);
        // As the picker names it ("cuda" is "cuda:0"), so an unchanged choice changes nothing.
        recordedDevice_ = device_->device();
        try {
            check_training_device(parse_device(recorded.toStdString()));
        } catch (const Error& e) {
            device_->setDevice(QStringLiteral("cpu"));
            deviceNote_->setText(tr("The run trained on %1, which cannot be used here (%2). It "
                                    "continues on the CPU: checkpoints load on any device.")
                                     .arg(recorded, QString::fromUtf8(e.what())));
            deviceNote_->show();
        }
    }
    connect(device_, &DevicePicker::deviceChosen, this, [this] {
        deviceNote_->hide();
        updateChanges();
        updateAcceptable();
    });

    buildEditors();
    layout->addWidget(editsBox_, 2);

    buttons_ = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons_, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons_, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons_);

    connect(modeGroup_, &QButtonGroup::idClicked, this, [this] {
        updateChanges();
        updateAcceptable();
    });
    setMode(mode);
    plotCheckpoints();
    // The newest checkpoint that still exists.
    for (int row = int(checkpoints_.size()) - 1; row >= 0; --row)
        if (checkpoints_[size_t(row)].missing.isEmpty()) {
            checkpointList_->setCurrentRow(row);
            break;
        }
    updateChanges();
    updateAcceptable();
    resize(900, 680);
}

ForkDialog::~ForkDialog() = default;

void ForkDialog::load(const QString& storePath) {
    QString error;
    const auto store = openStoreForReading(storePath, &error);
    if (!store) {
        problem_ = error.isEmpty() ? tr("There is no run store at %1.").arg(storePath) : error;
        return;
    }
    try {
        const store::Run run = store->run(run_);
        runName_ = QString::fromStdString(run.name);
        projectPath_ = QString::fromStdString(run.project_path);
        if (run.status == store::RunStatus::Running)
            problem_ = tr("Run %1 is still running: stop it or wait until it ends, then resume or "
                          "fork it from a checkpoint.")
                           .arg(run_);
        try {
            if (!run.project_json.empty())
                base_ = io::parse_project(run.project_json,
                                          "run " + std::to_string(run_) + "'s recorded project");
        } catch (const Error& e) {
            if (problem_.isEmpty()) problem_ = QString::fromUtf8(e.what());
        }
        // One row per step (a step can have several files: the epoch's checkpoint and
        // best.safetensors), standing on the newest of them that still holds what the run wrote
        // — the file a fork from that step branches from (train::checkpoint_files, newest
        // first).
        for (const auto& file : train::checkpoint_files(*store, run_)) {
            const store::Artifact& a = file.artifact;
            if (checkpoints_.empty() || checkpoints_.front().step != a.step) {
                checkpoints_.insert(checkpoints_.begin(), Checkpoint{});
                checkpoints_.front().step = a.step;
            }
            Checkpoint& c = checkpoints_.front();
            c.epoch = std::max(c.epoch, metadataInteger(a.metadata_json, "epoch", -1));
            c.best = c.best || metadataTrue(a.metadata_json, "best");
            if (file.problem.empty() && (c.path.isEmpty() || !c.missing.isEmpty())) {
                c.path = QString::fromStdString(a.path.string());
                c.missing.clear();
            } else if (c.path.isEmpty()) {
                c.path = QString::fromStdString(a.path.string());
                c.missing = file.problem == "deleted"
                                ? tr("file deleted")
                                : tr("file overwritten since the run wrote it");
            }
        }
        for (const auto& b : store->metric_series_downsampled(run_, "loss", {}, kLossBuckets)) {
            lossSteps_.push_back(double(b.last_step));
            lossValues_.push_back(b.last);
        }
    } catch (const Error& e) {
        problem_ = QString::fromUtf8(e.what());
        return;
    }
    if (problem_.isEmpty() && std::none_of(checkpoints_.begin(), checkpoints_.end(),
                                           [](const Checkpoint& c) { return c.missing.isEmpty(); }))
        problem_ =
            checkpoints_.empty()
                ? tr("Run %1 wrote no checkpoint: there is nothing to continue from.").arg(run_)
                : tr("Every checkpoint file of run %1 was deleted or overwritten.").arg(run_);
    if (problem_.isEmpty() && !base_)
        problem_ = tr("Run %1 has no recorded project to continue.").arg(run_);
}

void ForkDialog::buildEditors() {
    editsBox_ = new QGroupBox(tr("Changes for the fork"), this);
    editsBox_->setObjectName(QStringLiteral("forkEdits"));
    auto* columns = new QHBoxLayout(editsBox_);
    auto* form = new QFormLayout;
    learningRate_ = new QLineEdit(editsBox_);
    learningRate_->setObjectName(QStringLiteral("forkLearningRate"));
    auto* validator = new QDoubleValidator(1e-12, 1e6, 12, learningRate_);
    validator->setNotation(QDoubleValidator::ScientificNotation);
    learningRate_->setValidator(validator);
    epochs_ = new QSpinBox(editsBox_);
    epochs_->setObjectName(QStringLiteral("forkEpochs"));
    epochs_->setRange(1, 1000000);
    schedule_ = new QComboBox(editsBox_);
    schedule_->setObjectName(QStringLiteral("forkSchedule"));
    schedule_->addItem(kNoSchedule);
    for (const spec::ComponentKind* kind : spec::kinds_of(spec::Family::Scheduler))
        schedule_->addItem(QString::fromStdString(kind->name));
    summariesEvery_ = new QSpinBox(editsBox_);
    summariesEvery_->setRange(0, 1000000);
    summariesEvery_->setSpecialValueText(tr("off"));
    featureMapsEvery_ = new QSpinBox(editsBox_);
    featureMapsEvery_->setRange(0, 1000000);
    featureMapsEvery_->setSpecialValueText(tr("off"));
    form->addRow(tr("Learning rate"), learningRate_);
    form->addRow(tr("Epochs (in all)"), epochs_);
    form->addRow(tr("Schedule"), schedule_);
    form->addRow(tr("Histograms every"), summariesEvery_);
    form->addRow(tr("Feature maps every"), featureMapsEvery_);
    frozen_ = new QListWidget(editsBox_);
    frozen_->setObjectName(QStringLiteral("forkFrozenLayers"));
    frozen_->setToolTip(tr("Checked layers keep their weights (requires_grad = false)"));
    auto* frozenColumn = new QVBoxLayout;
    frozenColumn->addWidget(new QLabel(tr("Frozen layers"), editsBox_));
    frozenColumn->addWidget(frozen_);
    changesTable_ = new QTableWidget(0, 3, editsBox_);
    changesTable_->setObjectName(QStringLiteral("forkChanges"));
    changesTable_->setHorizontalHeaderLabels({tr("Setting"), tr("Parent"), tr("Fork")});
    changesTable_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    changesTable_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    changesTable_->verticalHeader()->hide();
    changesTable_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    changesNote_ = new QLabel(editsBox_);
    changesNote_->setObjectName(QStringLiteral("forkChangesNote"));
    changesNote_->setWordWrap(true);
    auto* diffColumn = new QVBoxLayout;
    diffColumn->addWidget(
        new QLabel(tr("What the fork changes (recorded in its parameters)"), editsBox_));
    diffColumn->addWidget(changesTable_);
    diffColumn->addWidget(changesNote_);
    columns->addLayout(form, 3);
    columns->addLayout(frozenColumn, 2);
    columns->addLayout(diffColumn, 4);

    if (base_) {
        const io::Project& p = *base_;
        if (auto lr = learningRateOf(p)) learningRate_->setText(QLocale().toString(*lr, 'g', 10));
        epochs_->setValue(int(std::min<int64_t>(p.train.epochs, 1000000)));
        schedule_->setCurrentText(
            p.train.scheduler ? QString::fromStdString(p.train.scheduler->kind) : kNoSchedule);
        summariesEvery_->setValue(int(p.train.capture.summaries_every));
        featureMapsEvery_->setValue(int(p.train.capture.feature_maps_every));
        const graph::Analysis analysis = graph::analyze(p.model);
        for (size_t i = 0; i < p.model.nodes.size(); ++i) {
            const graph::Node& node = p.model.nodes[i];
            if (i >= analysis.nodes.size() || analysis.nodes[i].params == 0) continue;
            auto* item = new QListWidgetItem(
                QString::fromStdString(analysis.nodes[i].module_name + " (" + node.kind + ")"),
                frozen_);
            item->setData(Qt::UserRole, qint64(node.id));
            item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
            item->setCheckState(node.frozen ? Qt::Checked : Qt::Unchecked);
        }
    }
    connect(learningRate_, &QLineEdit::textChanged, this, [this] {
        updateChanges();
        updateAcceptable();
    });
    const auto changed = [this] { updateChanges(); };
    connect(epochs_, &QSpinBox::valueChanged, this, changed);
    connect(schedule_, &QComboBox::currentTextChanged, this, changed);
    connect(summariesEvery_, &QSpinBox::valueChanged, this, changed);
    connect(featureMapsEvery_, &QSpinBox::valueChanged, this, changed);
    connect(frozen_, &QListWidget::itemChanged, this, changed);
}

QString ForkDialog::projectDirectory() const {
    return projectPath_.isEmpty() ? QString() : QFileInfo(projectPath_).path();
}

ForkDialog::Mode ForkDialog::mode() const {
    return Mode(modeGroup_->checkedId());
}

void ForkDialog::setMode(Mode mode) {
    modeGroup_->button(int(mode))->setChecked(true);
    updateChanges();
    updateAcceptable();
}

std::optional<int64_t> ForkDialog::checkpointStep() const {
    const int row = checkpointList_->currentRow();
    if (row < 0 || size_t(row) >= checkpoints_.size()) return std::nullopt;
    return checkpoints_[size_t(row)].step;
}

QString ForkDialog::checkpointPath() const {
    const int row = checkpointList_->currentRow();
    return row < 0 || size_t(row) >= checkpoints_.size() ? QString()
                                                         : checkpoints_[size_t(row)].path;
}

bool ForkDialog::selectCheckpoint(int64_t step) {
    for (size_t row = checkpoints_.size(); row-- > 0;)
        if (checkpoints_[row].step == step && checkpoints_[row].missing.isEmpty()) {
            checkpointList_->setCurrentRow(int(row));
            return true;
        }
    return false;
}

train::ForkSource ForkDialog::forkSource() const {
    return train::ForkSource{run_, checkpointStep()};
}

io::Project ForkDialog::project() const {
    if (!base_) return {};
    io::Project p = *base_;
    if (device_->device() != recordedDevice_) p.train.device = device_->device().toStdString();
    if (mode() == Mode::Resume) return p;
    bool ok = false;
    const double lr = QLocale().toDouble(learningRate_->text(), &ok);
    const double recordedLr = learningRateOf(p).value_or(std::nan(""));
    // Only a changed value is written: the text round-trips the recorded one with 10 digits.
    if (ok && lr > 0 && std::abs(lr - recordedLr) > 1e-9 * std::abs(recordedLr))
        p.train.optimizer.options.set("lr", lr);
    p.train.epochs = epochs_->value();
    const QString schedule = schedule_->currentText();
    if (schedule == kNoSchedule)
        p.train.scheduler.reset();
    else if (!p.train.scheduler || p.train.scheduler->kind != schedule.toStdString())
        p.train.scheduler = spec::Choice{schedule.toStdString(), {}};
    p.train.capture.summaries_every = summariesEvery_->value();
    p.train.capture.feature_maps_every = featureMapsEvery_->value();
    for (int row = 0; row < frozen_->count(); ++row) {
        const QListWidgetItem* item = frozen_->item(row);
        const auto id = graph::NodeId(item->data(Qt::UserRole).toLongLong());
        for (auto& node : p.model.nodes)
            if (node.id == id) node.frozen = item->checkState() == Qt::Checked;
    }
    return p;
}

std::vector<io::ProjectChange> ForkDialog::changes() const {
    if (!base_ || mode() == Mode::Resume) return {};
    return io::project_changes(*base_, project());
}

void ForkDialog::plotCheckpoints() {
    plot_->clearGraphs();
    plot_->clearItems();
    QCPGraph* loss = plot_->addGraph();
    QPen pen(colors::kTrainStepCurve);
    pen.setWidthF(1.5);
    loss->setPen(pen);
    loss->setData(QVector<double>(lossSteps_.begin(), lossSteps_.end()),
                  QVector<double>(lossValues_.begin(), lossValues_.end()), true);
    // A marker on the curve at every checkpoint (at the loss of its step, or the nearest).
    QCPGraph* markers = plot_->addGraph();
    markers->setLineStyle(QCPGraph::lsNone);
    markers->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCircle, colors::kAccent, colors::kSurface, 9));
    for (const auto& c : checkpoints_) {
        double y = std::nan("");
        if (!lossSteps_.empty()) {
            const auto at = std::lower_bound(lossSteps_.begin(), lossSteps_.end(), double(c.step));
            const size_t i = size_t(
                std::min<ptrdiff_t>(at - lossSteps_.begin(), ptrdiff_t(lossSteps_.size()) - 1));
            y = lossValues_[i];
        }
        markers->addData(double(c.step), y);
    }
    plot_->rescaleAxes();
    if (lossSteps_.empty()) plot_->yAxis->setRange(0, 1);
    const QCPRange x = plot_->xAxis->range();
    plot_->xAxis->setRange(x.lower - 0.03 * x.size() - 1, x.upper + 0.03 * x.size() + 1);
    const QCPRange y = plot_->yAxis->range();
    plot_->yAxis->setRange(y.lower - 0.08 * y.size(), y.upper + 0.08 * y.size());
    plot_->replot();
}

void ForkDialog::onPlotClicked(double step) {
    int best = -1;
    double bestDistance = 0;
    for (size_t row = 0; row < checkpoints_.size(); ++row) {
        if (!checkpoints_[row].missing.isEmpty()) continue;
        const double d = std::abs(double(checkpoints_[row].step) - step);
        if (best < 0 || d < bestDistance) best = int(row), bestDistance = d;
    }
    if (best >= 0) checkpointList_->setCurrentRow(best);
}

void ForkDialog::onCheckpointRowChanged(int row) {
    // The chosen checkpoint: a line through it on the timeline.
    plot_->clearItems();
    if (row >= 0 && size_t(row) < checkpoints_.size()) {
        auto* line = new QCPItemStraightLine(plot_);
        QPen pen(colors::kAccent);
        pen.setStyle(Qt::DashLine);
        line->setPen(pen);
        const double step = double(checkpoints_[size_t(row)].step);
        line->point1->setCoords(step, 0);
        line->point2->setCoords(step, 1);
    }
    plot_->replot();
    updateChanges();
    updateAcceptable();
}

void ForkDialog::updateChanges() {
    const bool forking = mode() == Mode::Fork;
    editsBox_->setEnabled(forking && base_.has_value());
    const auto list = changes();
    changesTable_->setRowCount(int(list.size()));
    for (size_t i = 0; i < list.size(); ++i) {
        changesTable_->setItem(int(i), 0,
                               new QTableWidgetItem(QString::fromStdString(list[i].path)));
        changesTable_->setItem(int(i), 1,
                               new QTableWidgetItem(QString::fromStdString(list[i].before)));
        changesTable_->setItem(int(i), 2,
                               new QTableWidgetItem(QString::fromStdString(list[i].after)));
    }
    const auto step = checkpointStep();
    const QString at = step ? tr("step %1").arg(*step) : tr("the checkpoint");
    if (!forking)
        changesNote_->setText(tr("Resuming continues run %1 from %2 with its own settings; the "
                                 "new run is listed under it.")
                                  .arg(run_)
                                  .arg(at));
    else if (list.empty())
        changesNote_->setText(tr("No changes: after %1 the fork repeats run %2's losses exactly "
                                 "(same data order, random state, optimizer and schedule).")
                                  .arg(at)
                                  .arg(run_));
    else
        changesNote_->setText(tr("%n change(s), recorded as fork.diff.* beside fork.from = %1@%2.",
                                 nullptr, int(list.size()))
                                  .arg(run_)
                                  .arg(step.value_or(0)));
    header_->setText(
        tr("<b>Run %1</b> %2 — %3 checkpoint(s). Pick one on the curve or in the list.")
            .arg(run_)
            .arg(runName_.toHtmlEscaped())
            .arg(checkpoints_.size()));
}

void ForkDialog::updateAcceptable() {
    QPushButton* ok = buttons_->button(QDialogButtonBox::Ok);
    ok->setText(mode() == Mode::Fork ? tr("Fork") : tr("Resume"));
    ok->setObjectName(QStringLiteral("forkStart"));
    const bool lrOk = mode() == Mode::Resume || learningRate_->text().isEmpty() ||
                      learningRate_->hasAcceptableInput();
    setStyleProperty(learningRate_, "invalid", !lrOk);
    ok->setEnabled(problem_.isEmpty() && base_ && checkpointStep() && lrOk);
}

} // namespace myelin::ui
