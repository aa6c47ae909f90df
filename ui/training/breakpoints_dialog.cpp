#include "training/breakpoints_dialog.h"

#include <myelin/error.h>

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QGridLayout>
#include <QLabel>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>

namespace myelin::ui {

namespace {

constexpr const char* kSettingsKey = "training/breakpoints";
using Kind = train::BreakCondition::Kind;

const train::BreakCondition* findCondition(const std::vector<train::BreakCondition>& conditions,
                                           Kind kind) {
    for (const auto& c : conditions)
        if (c.kind == kind) return &c;
    return nullptr;
}

} // namespace

std::vector<train::BreakCondition> storedBreakpoints() {
    const QString text = QSettings().value(QString::fromLatin1(kSettingsKey)).toString();
    if (text.trimmed().isEmpty()) return {};
    try {
        return train::parse_break_conditions(text.toStdString());
    } catch (const Error&) {
        return {};
    }
}

void storeBreakpoints(const std::vector<train::BreakCondition>& conditions) {
    QSettings().setValue(QString::fromLatin1(kSettingsKey), breakpointsText(conditions));
}

QString breakpointsText(const std::vector<train::BreakCondition>& conditions) {
    QStringList items;
    for (const auto& c : conditions)
        items << QString::fromStdString(train::format_break_condition(c));
    return items.join(QLatin1Char(','));
}

BreakpointsDialog::BreakpointsDialog(const std::vector<train::BreakCondition>& conditions,
                                     QWidget* parent)
    : QDialog(parent) {
    setObjectName(QStringLiteral("breakpointsDialog"));
    setWindowTitle(tr("Breakpoints"));
    auto* intro = new QLabel(
        tr("Pause a run at the step where one of these holds, before the optimizer applies it, "
           "and select the layer it concerns. <b>Resume</b> finishes that step as it would have "
           "run; <b>Stop</b> gives it up and writes a checkpoint of the position before it. Each "
           "condition pauses a run once per layer."),
        this);
    intro->setWordWrap(true);

    nonFinite_ = new QCheckBox(tr("The loss or a layer's gradient is NaN or infinite"), this);
    nonFinite_->setObjectName(QStringLiteral("breakNonFinite"));
    gradSpike_ = new QCheckBox(tr("A layer's gradient norm jumps above"), this);
    gradSpike_->setObjectName(QStringLiteral("breakGradSpike"));
    spikeFactor_ = new QDoubleSpinBox(this);
    spikeFactor_->setObjectName(QStringLiteral("breakSpikeFactor"));
    spikeFactor_->setRange(1.5, 1e6);
    spikeFactor_->setDecimals(1);
    spikeFactor_->setValue(10);
    spikeFactor_->setSuffix(tr(" × its median of the last 50 steps"));
    dead_ = new QCheckBox(tr("An activation layer's output is more than"), this);
    dead_->setObjectName(QStringLiteral("breakDead"));
    deadPercent_ = new QDoubleSpinBox(this);
    deadPercent_->setObjectName(QStringLiteral("breakDeadPercent"));
    deadPercent_->setRange(1, 100);
    deadPercent_->setDecimals(1);
    deadPercent_->setValue(90);
    deadPercent_->setSuffix(tr(" % zeros (dead units)"));
    lossAbove_ = new QCheckBox(tr("The loss is above"), this);
    lossAbove_->setObjectName(QStringLiteral("breakLossAbove"));
    lossValue_ = new QDoubleSpinBox(this);
    lossValue_->setObjectName(QStringLiteral("breakLossValue"));
    lossValue_->setRange(-1e9, 1e9);
    lossValue_->setDecimals(4);
    lossValue_->setValue(10);
    lossFromStep_ = new QSpinBox(this);
    lossFromStep_->setObjectName(QStringLiteral("breakLossFromStep"));
    lossFromStep_->setRange(0, 1000000000);
    lossFromStep_->setPrefix(tr("from step "));

    nonFinite_->setChecked(findCondition(conditions, Kind::NonFinite) != nullptr);
    if (const auto* c = findCondition(conditions, Kind::GradSpike)) {
        gradSpike_->setChecked(true);
        spikeFactor_->setValue(c->threshold);
    }
    if (const auto* c = findCondition(conditions, Kind::Dead)) {
        dead_->setChecked(true);
        deadPercent_->setValue(c->threshold * 100);
    }
    if (const auto* c = findCondition(conditions, Kind::LossAbove)) {
        lossAbove_->setChecked(true);
        lossValue_->setValue(c->threshold);
        lossFromStep_->setValue(int(std::min<int64_t>(c->from_step, 1000000000)));
    }

    for (QCheckBox* box : {nonFinite_, gradSpike_, dead_, lossAbove_}) // never cut short
        box->setSizePolicy(QSizePolicy::Minimum, QSizePolicy::Fixed);
    auto* grid = new QGridLayout;
    grid->setColumnStretch(1, 1);
    grid->setColumnStretch(2, 1);
    grid->addWidget(nonFinite_, 0, 0, 1, 3);
    grid->addWidget(gradSpike_, 1, 0);
    grid->addWidget(spikeFactor_, 1, 1, 1, 2);
    grid->addWidget(dead_, 2, 0);
    grid->addWidget(deadPercent_, 2, 1, 1, 2);
    grid->addWidget(lossAbove_, 3, 0);
    grid->addWidget(lossValue_, 3, 1);
    grid->addWidget(lossFromStep_, 3, 2);
    const auto follow = [](QCheckBox* box, std::initializer_list<QWidget*> fields) {
        for (QWidget* field : fields) {
            field->setEnabled(box->isChecked());
            QObject::connect(box, &QCheckBox::toggled, field, &QWidget::setEnabled);
        }
    };
    follow(gradSpike_, {spikeFactor_});
    follow(dead_, {deadPercent_});
    follow(lossAbove_, {lossValue_, lossFromStep_});

    auto* cli = new QLabel(this);
    cli->setObjectName(QStringLiteral("breakCommandLine"));
    cli->setTextInteractionFlags(Qt::TextSelectableByMouse);
    cli->setWordWrap(true);
    const auto showCommandLine = [this, cli] {
        const QString text = breakpointsText(this->conditions());
        cli->setText(
            text.isEmpty()
                ? tr("No breakpoints: a run goes to its end (a NaN still fails it).")
                : tr("The same on the command line: myelin train PROJECT --break-on %1").arg(text));
    };
    for (QCheckBox* box : {nonFinite_, gradSpike_, dead_, lossAbove_})
        connect(box, &QCheckBox::toggled, this, showCommandLine);
    for (QDoubleSpinBox* box : {spikeFactor_, deadPercent_, lossValue_})
        connect(box, &QDoubleSpinBox::valueChanged, this, showCommandLine);
    connect(lossFromStep_, &QSpinBox::valueChanged, this, showCommandLine);
    showCommandLine();

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(grid);
    layout->addWidget(cli);
    layout->addWidget(buttons);
    setMinimumWidth(640);
}

std::vector<train::BreakCondition> BreakpointsDialog::conditions() const {
    std::vector<train::BreakCondition> out;
    if (nonFinite_->isChecked()) out.push_back({Kind::NonFinite, 0, 0});
    if (gradSpike_->isChecked()) out.push_back({Kind::GradSpike, spikeFactor_->value(), 0});
    if (dead_->isChecked()) out.push_back({Kind::Dead, deadPercent_->value() / 100, 0});
    if (lossAbove_->isChecked())
        out.push_back({Kind::LossAbove, lossValue_->value(), lossFromStep_->value()});
    return out;
}

} // namespace myelin::ui
