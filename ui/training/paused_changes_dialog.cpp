#include "training/paused_changes_dialog.h"

#include "widgets/theme.h"

#include <myelin/graph/analysis.h>

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

namespace myelin::ui {

namespace {

enum LayerColumn { kLayerColumn, kTrainsColumn, kMultiplierColumn };

// A positive finite number, or nullopt.
std::optional<double> positive(const QLineEdit* field) {
    bool ok = false;
    const double v = field->text().trimmed().toDouble(&ok);
    if (!ok || !std::isfinite(v) || v <= 0) return std::nullopt;
    return v;
}

QString text(double v) {
    return QString::number(v, 'g', 6);
}

bool differs(double a, double b) {
    return std::abs(a - b) > 1e-12 * std::max(1.0, std::abs(b));
}

} // namespace

PausedChangesDialog::PausedChangesDialog(int64_t step, double lr, const io::Project& run,
                                         QWidget* parent)
    : QDialog(parent), lrBefore_(lr), clipNormBefore_(run.train.clip_grad_norm),
      clipValueBefore_(run.train.clip_grad_value), captureBefore_(run.train.capture) {
    setObjectName(QStringLiteral("pausedChangesDialog"));
    setWindowTitle(tr("Change While Paused"));
    auto* intro = new QLabel(tr("The run is paused after step %1. These take effect from its next "
                                "step when you resume, and are recorded with the run at this "
                                "step. The model, the data and the optimizer's kind cannot "
                                "change during a run.")
                                 .arg(step),
                             this);
    intro->setWordWrap(true);

    const graph::Analysis analysis = graph::analyze(run.model);
    for (size_t i : analysis.order) {
        const graph::NodeInfo& info = analysis.nodes[i];
        if (info.params == 0 || info.module_name.empty()) continue;
        const graph::Node& node = run.model.nodes[i];
        // As the canvas names it: "conv1 (Conv2d)", or "Conv2d #2" for an unnamed node.
        const std::string label = node.name.empty() ? node.kind + " #" + std::to_string(node.id)
                                                    : node.name + " (" + node.kind + ")";
        layersBefore_.push_back({info.module_name, label, node.frozen, node.lr_multiplier});
    }

    lr_ = new QLineEdit(text(lr), this);
    lr_->setObjectName(QStringLiteral("pausedLearningRate"));
    lr_->setToolTip(tr("Every parameter group keeps its ratio to it, and a schedule is scaled "
                       "with it: it goes on from the new value."));
    auto clipRow = [this](QCheckBox*& on, QLineEdit*& field, std::optional<double> value,
                          const QString& name) {
        on = new QCheckBox(this);
        on->setChecked(value.has_value());
        field = new QLineEdit(value ? text(*value) : QStringLiteral("1"), this);
        field->setObjectName(name);
        field->setEnabled(value.has_value());
        connect(on, &QCheckBox::toggled, field, &QLineEdit::setEnabled);
        connect(on, &QCheckBox::toggled, this, &PausedChangesDialog::validate);
        connect(field, &QLineEdit::textChanged, this, &PausedChangesDialog::validate);
        auto* row = new QHBoxLayout;
        row->addWidget(on);
        row->addWidget(field, 1);
        return row;
    };
    auto* form = new QFormLayout;
    form->addRow(tr("Learning rate"), lr_);
    form->addRow(tr("Clip gradient norm"), clipRow(clipNormOn_, clipNorm_, clipNormBefore_,
                                                   QStringLiteral("pausedClipNorm")));
    form->addRow(tr("Clip gradient value"), clipRow(clipValueOn_, clipValue_, clipValueBefore_,
                                                    QStringLiteral("pausedClipValue")));
    connect(lr_, &QLineEdit::textChanged, this, &PausedChangesDialog::validate);

    problem_ = new QLabel(this);
    problem_->setWordWrap(true);
    problem_->setStyleSheet(QStringLiteral("color: %1").arg(colors::kError.name()));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    apply_ = buttons->button(QDialogButtonBox::Ok);
    apply_->setText(tr("Apply at the Next Step"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(form);
    layout->addWidget(makeLayersTable());
    layout->addWidget(makeCaptureForm());
    layout->addWidget(problem_);
    layout->addWidget(buttons);
    resize(520, sizeHint().height());
    validate();
}

QWidget* PausedChangesDialog::makeLayersTable() {
    auto* box = new QGroupBox(tr("Layers"), this);
    layers_ = new QTableWidget(int(layersBefore_.size()), 3, box);
    layers_->setObjectName(QStringLiteral("pausedLayers"));
    layers_->setHorizontalHeaderLabels({tr("Layer"), tr("Trains"), tr("lr ×")});
    layers_->verticalHeader()->hide();
    layers_->setSelectionMode(QAbstractItemView::NoSelection);
    layers_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    layers_->horizontalHeader()->setSectionResizeMode(kLayerColumn, QHeaderView::Stretch);
    layers_->setToolTip(tr("A layer that stops training keeps its weights; one that starts gets "
                           "fresh optimizer state. A multiplier scales the layer's learning rate "
                           "against the run's."));
    for (int row = 0; row < int(layersBefore_.size()); ++row) {
        const Layer& layer = layersBefore_[size_t(row)];
        layers_->setItem(row, kLayerColumn,
                         new QTableWidgetItem(QString::fromStdString(layer.label)));
        auto* trains = new QTableWidgetItem;
        trains->setFlags(Qt::ItemIsUserCheckable | Qt::ItemIsEnabled);
        trains->setCheckState(layer.frozen ? Qt::Unchecked : Qt::Checked);
        layers_->setItem(row, kTrainsColumn, trains);
        auto* multiplier = new QLineEdit(text(layer.lrMultiplier), layers_);
        multiplier->setFrame(false);
        connect(multiplier, &QLineEdit::textChanged, this, &PausedChangesDialog::validate);
        layers_->setCellWidget(row, kMultiplierColumn, multiplier);
    }
    connect(layers_, &QTableWidget::itemChanged, this, &PausedChangesDialog::validate);
    layers_->resizeColumnToContents(kTrainsColumn);
    // As tall as its rows, up to six; more scroll.
    layers_->setFixedHeight(layers_->horizontalHeader()->sizeHint().height() +
                            std::min(6, std::max(1, layers_->rowCount())) *
                                layers_->verticalHeader()->defaultSectionSize() +
                            2 * layers_->frameWidth());
    auto* layout = new QVBoxLayout(box);
    layout->addWidget(layers_);
    return box;
}

QWidget* PausedChangesDialog::makeCaptureForm() {
    auto* box = new QGroupBox(tr("Capture"), this);
    auto every = [this](int64_t value, const QString& name) {
        auto* spin = new QSpinBox(this);
        spin->setObjectName(name);
        spin->setRange(0, 1'000'000);
        spin->setSpecialValueText(tr("off"));
        spin->setPrefix(tr("every "));
        auto suffix = [spin](int n) { spin->setSuffix(n == 1 ? tr(" step") : tr(" steps")); };
        connect(spin, &QSpinBox::valueChanged, spin, suffix);
        spin->setValue(int(std::min<int64_t>(value, 1'000'000)));
        suffix(spin->value());
        connect(spin, &QSpinBox::valueChanged, this, &PausedChangesDialog::validate);
        return spin;
    };
    layerNormsEvery_ = every(captureBefore_.layer_norms ? captureBefore_.layer_norms_every : 0,
                             QStringLiteral("pausedLayerNormsEvery"));
    summariesEvery_ = every(captureBefore_.summaries_every, QStringLiteral("pausedSummariesEvery"));
    featureMapsEvery_ =
        every(captureBefore_.feature_maps_every, QStringLiteral("pausedFeatureMapsEvery"));
    auto* form = new QFormLayout(box);
    form->addRow(tr("Layer norms"), layerNormsEvery_);
    form->addRow(tr("Activation and gradient summaries"), summariesEvery_);
    form->addRow(tr("Feature maps"), featureMapsEvery_);
    return box;
}

std::optional<double> PausedChangesDialog::multiplierAt(int row) const {
    return positive(qobject_cast<const QLineEdit*>(layers_->cellWidget(row, kMultiplierColumn)));
}

void PausedChangesDialog::validate() {
    QString problem;
    if (!positive(lr_))
        problem = tr("The learning rate must be a number above 0.");
    else if (clipNormOn_->isChecked() && !positive(clipNorm_))
        problem = tr("The gradient norm limit must be a number above 0.");
    else if (clipValueOn_->isChecked() && !positive(clipValue_))
        problem = tr("The gradient value limit must be a number above 0.");
    bool anyTrains = layersBefore_.empty();
    for (int row = 0; row < layers_->rowCount() && problem.isEmpty(); ++row) {
        if (!multiplierAt(row))
            problem = tr("The lr multiplier of %1 must be a number above 0.")
                          .arg(layers_->item(row, kLayerColumn)->text());
        if (layers_->item(row, kTrainsColumn)->checkState() == Qt::Checked) anyTrains = true;
    }
    if (problem.isEmpty() && !anyTrains)
        problem = tr("At least one layer must train: to stop training, press Stop.");
    problem_->setText(problem);
    problem_->setVisible(!problem.isEmpty());
    apply_->setEnabled(problem.isEmpty() && !edits().empty());
}

train::RunEdits PausedChangesDialog::edits() const {
    train::RunEdits e;
    const std::optional<double> lr = positive(lr_);
    if (!lr) return {};
    if (differs(*lr, lrBefore_)) e.lr = *lr;
    auto clip = [](const QCheckBox* on, const QLineEdit* field, std::optional<double> before,
                   std::optional<std::optional<double>>& out) {
        if (!on->isChecked()) {
            if (before) out = std::optional<double>();
            return true;
        }
        const std::optional<double> v = positive(field);
        if (!v) return false;
        if (v != before) out = v;
        return true;
    };
    if (!clip(clipNormOn_, clipNorm_, clipNormBefore_, e.clip_grad_norm) ||
        !clip(clipValueOn_, clipValue_, clipValueBefore_, e.clip_grad_value))
        return {};
    for (int row = 0; row < layers_->rowCount(); ++row) {
        const Layer& before = layersBefore_[size_t(row)];
        const bool frozen = layers_->item(row, kTrainsColumn)->checkState() != Qt::Checked;
        if (frozen != before.frozen) e.frozen[before.module] = frozen;
        const std::optional<double> multiplier = multiplierAt(row);
        if (!multiplier) return {};
        if (differs(*multiplier, before.lrMultiplier)) e.lr_multiplier[before.module] = *multiplier;
    }
    spec::CaptureSpec capture = captureBefore_;
    capture.layer_norms = layerNormsEvery_->value() > 0;
    if (capture.layer_norms) capture.layer_norms_every = layerNormsEvery_->value();
    capture.summaries_every = summariesEvery_->value();
    capture.feature_maps_every = featureMapsEvery_->value();
    if (capture != captureBefore_) e.capture = capture;
    return e;
}

} // namespace myelin::ui
