#include "shell/evaluate_page.h"

#include "eval/evaluation_view.h"
#include "eval/quantization_view.h"
#include "eval/single_example_view.h"
#include "runs/checkpoint_picker.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QTabWidget>
#include <QVBoxLayout>

namespace myelin::ui {

EvaluatePage::EvaluatePage(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("evaluatePage"));
    auto* layout = new QVBoxLayout(this);
    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Checkpoint"), this));
    picker_ = new CheckpointPicker(this);
    top->addWidget(picker_, 1);
    evaluateButton_ = new QPushButton(tr("Evaluate"), this);
    evaluateButton_->setObjectName(QStringLiteral("evaluateButton"));
    top->addWidget(evaluateButton_);
    layout->addLayout(top);
    note_ = new QLabel(this);
    note_->setObjectName(QStringLiteral("evaluateNote"));
    note_->setWordWrap(true);
    layout->addWidget(note_);
    tabs_ = new QTabWidget(this);
    tabs_->setObjectName(QStringLiteral("evaluateTabs"));
    evaluation_ = new EvaluationView(tabs_);
    single_ = new SingleExampleView(tabs_);
    quantization_ = new QuantizationView(tabs_);
    tabs_->addTab(evaluation_, tr("Test Set"));
    tabs_->addTab(single_, tr("One Example"));
    tabs_->addTab(quantization_, tr("Quantize"));
    layout->addWidget(tabs_, 1);

    connect(evaluateButton_, &QPushButton::clicked, this, &EvaluatePage::evaluate);
    connect(picker_, &CheckpointPicker::changed, this, &EvaluatePage::updateState);
    connect(evaluation_, &EvaluationView::exampleActivated, this, &EvaluatePage::showExample);
    connect(quantization_, &QuantizationView::quantizeRequested, this, &EvaluatePage::quantize);
    // Each refuses to start while the other runs (they share the process's random state).
    connect(evaluation_, &EvaluationView::finished, this, &EvaluatePage::updateState);
    connect(quantization_, &QuantizationView::finished, this, &EvaluatePage::updateState);
    connect(tabs_, &QTabWidget::currentChanged, this, [this](int index) {
        // The single-example view loads its model when first shown for a checkpoint.
        if (tabs_->widget(index) != single_) return;
        io::Project project;
        QString dir;
        const QString key = picker_->checkpointPath();
        if (key != singleModelKey_ && !key.isEmpty() && chosenModel(project, dir)) {
            single_->setModel(project, dir, key);
            singleModelKey_ = key;
        }
    });
    updateState();
}

void EvaluatePage::setStorePath(const QString& path) {
    picker_->setStorePath(path);
}

void EvaluatePage::setOpenProject(const std::optional<io::Project>& project,
                                  const QString& dataDir) {
    openProject_ = project;
    openDataDir_ = dataDir;
    updateState();
}

void EvaluatePage::setTrainingActive(bool active) {
    trainingActive_ = active;
    updateState();
}

bool EvaluatePage::chosenModel(io::Project& project, QString& dataDir) {
    if (auto recorded = picker_->runProject()) {
        project = std::move(*recorded);
        dataDir = picker_->runProjectDirectory();
        if (dataDir.isEmpty()) dataDir = openDataDir_;
        return true;
    }
    if (openProject_) {
        project = *openProject_;
        dataDir = openDataDir_;
        return true;
    }
    note_->setText(tr("This checkpoint's project is not known: open the project it was trained "
                      "with."));
    return false;
}

void EvaluatePage::evaluate() {
    if (trainingActive_ || evaluation_->isRunning() || quantization_->isRunning()) return;
    io::Project project;
    QString dir;
    const QString checkpoint = picker_->checkpointPath();
    if (checkpoint.isEmpty() || !chosenModel(project, dir)) return;
    tabs_->setCurrentWidget(evaluation_);
    evaluation_->evaluate(project, dir, checkpoint);
    updateState();
}

void EvaluatePage::quantize() {
    if (trainingActive_ || evaluation_->isRunning() || quantization_->isRunning()) return;
    io::Project project;
    QString dir;
    const QString checkpoint = picker_->checkpointPath();
    if (checkpoint.isEmpty() || !chosenModel(project, dir)) return;
    tabs_->setCurrentWidget(quantization_);
    quantization_->quantize(project, dir, checkpoint);
    updateState();
}

bool EvaluatePage::evaluateRun(qint64 run) {
    picker_->reload();
    if (!picker_->selectRun(run)) {
        note_->setText(tr("Run %1 has no checkpoint left to evaluate.").arg(run));
        return false;
    }
    picker_->checkpointBox()->setCurrentIndex(0); // its best, else its last
    evaluate();
    return true;
}

void EvaluatePage::showExample(qint64 index) {
    tabs_->setCurrentWidget(single_); // loads the model (currentChanged above)
    single_->showExample(index);
}

void EvaluatePage::updateState() {
    const bool chosen = !picker_->checkpointPath().isEmpty();
    const bool quantizing = quantization_->isRunning();
    evaluateButton_->setEnabled(chosen && !trainingActive_ && !quantizing);
    evaluation_->setCheckpointChosen(chosen);
    quantization_->setCheckpointChosen(chosen);
    quantization_->setBlockedReason(
        trainingActive_ ? tr("A run is training: quantize when it has ended (or stop it).")
        : evaluation_->isRunning() ? tr("An evaluation is running: quantize when it has ended.")
                                   : QString());
    if (trainingActive_)
        note_->setText(tr("A run is training: evaluate when it has ended (or stop it)."));
    else if (!chosen)
        note_->setText(picker_->problem());
    else
        note_->setText(tr("The test data of the checkpoint's project is used (its validation "
                          "part when it has no test part)."));
}

} // namespace myelin::ui
