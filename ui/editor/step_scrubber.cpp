#include "editor/step_scrubber.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSlider>

#include <algorithm>

namespace myelin::ui {

StepScrubber::StepScrubber(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("stepScrubber"));
    slider_ = new QSlider(Qt::Horizontal, this);
    slider_->setObjectName(QStringLiteral("stepScrubberSlider"));
    slider_->setToolTip(tr("Move the canvas badges and the inspection views to a recorded step"));
    label_ = new QLabel(this);
    label_->setObjectName(QStringLiteral("stepScrubberLabel"));
    // A fixed width: the text changes several times a second while a run goes, and a label
    // that grows would lay out (and repaint) the canvas above it each time.
    label_->setFixedWidth(label_->fontMetrics().horizontalAdvance(
        QStringLiteral("run 99999 · step 99999999 of 99999999")));
    live_ = new QCheckBox(tr("Live"), this);
    live_->setObjectName(QStringLiteral("stepScrubberLive"));
    live_->setToolTip(tr("Follow the newest recorded step while the run goes"));

    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(8, 2, 8, 2);
    layout->addWidget(new QLabel(tr("Inspect step"), this));
    layout->addWidget(slider_, 1);
    layout->addWidget(label_);
    layout->addWidget(live_);

    connect(slider_, &QSlider::valueChanged, this, [this](int value) {
        updateLabel();
        if (live_->isChecked()) {
            const QSignalBlocker blocker(live_);
            live_->setChecked(false); // a step chosen by hand is not the newest one any more
            emit followRequested(false);
        }
        emit stepRequested(value);
    });
    connect(live_, &QCheckBox::toggled, this, [this](bool on) { emit followRequested(on); });
    setVisible(false);
}

void StepScrubber::setSteps(int64_t run, int64_t selected, int64_t first, int64_t last,
                            bool following) {
    run_ = run;
    setVisible(run >= 0 && last >= first);
    const QSignalBlocker sliderBlocker(slider_);
    const QSignalBlocker liveBlocker(live_);
    slider_->setRange(int(first), int(std::max(first, last)));
    slider_->setValue(int(std::clamp(selected, first, std::max(first, last))));
    live_->setChecked(following);
    updateLabel();
}

int64_t StepScrubber::step() const {
    return slider_->value();
}

bool StepScrubber::following() const {
    return live_->isChecked();
}

void StepScrubber::updateLabel() {
    label_->setText(
        tr("run %1 · step %2 of %3").arg(run_).arg(slider_->value()).arg(slider_->maximum()));
}

} // namespace myelin::ui
