#include "training/paused_changes_dialog.h"

#include "widgets/theme.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

#include <cmath>

namespace myelin::ui {

namespace {

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

} // namespace

PausedChangesDialog::PausedChangesDialog(int64_t step, double lr, std::optional<double> clipNorm,
                                         std::optional<double> clipValue, QWidget* parent)
    : QDialog(parent), lrBefore_(lr), clipNormBefore_(clipNorm), clipValueBefore_(clipValue) {
    setObjectName(QStringLiteral("pausedChangesDialog"));
    setWindowTitle(tr("Change While Paused"));
    auto* intro = new QLabel(tr("The run is paused after step %1. These take effect from its next "
                                "step when you resume, and are recorded with the run at this "
                                "step. The model, the data and the optimizer's kind cannot "
                                "change during a run.")
                                 .arg(step),
                             this);
    intro->setWordWrap(true);

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
    form->addRow(tr("Clip gradient norm"),
                 clipRow(clipNormOn_, clipNorm_, clipNorm, QStringLiteral("pausedClipNorm")));
    form->addRow(tr("Clip gradient value"),
                 clipRow(clipValueOn_, clipValue_, clipValue, QStringLiteral("pausedClipValue")));
    connect(lr_, &QLineEdit::textChanged, this, &PausedChangesDialog::validate);

    problem_ = new QLabel(this);
    problem_->setStyleSheet(QStringLiteral("color: %1").arg(colors::kError.name()));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    apply_ = buttons->button(QDialogButtonBox::Ok);
    apply_->setText(tr("Apply at the Next Step"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(form);
    layout->addWidget(problem_);
    layout->addWidget(buttons);
    resize(460, sizeHint().height());
    validate();
}

void PausedChangesDialog::validate() {
    QString problem;
    if (!positive(lr_))
        problem = tr("The learning rate must be a number above 0.");
    else if (clipNormOn_->isChecked() && !positive(clipNorm_))
        problem = tr("The gradient norm limit must be a number above 0.");
    else if (clipValueOn_->isChecked() && !positive(clipValue_))
        problem = tr("The gradient value limit must be a number above 0.");
    problem_->setText(problem);
    apply_->setEnabled(problem.isEmpty() && !edits().empty());
}

train::RunEdits PausedChangesDialog::edits() const {
    train::RunEdits e;
    const std::optional<double> lr = positive(lr_);
    if (!lr) return {};
    if (std::abs(*lr - lrBefore_) > 1e-12 * std::max(1.0, lrBefore_)) e.lr = *lr;
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
    return e;
}

} // namespace myelin::ui
