#include "eval/evaluation_view.h"
#include "eval/read_only_table.h"

#include "eval/confusion_matrix_widget.h"
#include "eval/example_render.h"
#include "widgets/theme.h"

#include <myelin/io/project.h>
#include <myelin/spec/components.h>
#include <myelin/train/trainer.h>

#include <QCheckBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>
#include <myelin/spec/components.h>
#include <qcustomplot.h>

#include <algorithm>
#include <map>

namespace myelin::ui {

namespace {

constexpr int kThumbnail = 56;
constexpr int kMostListed = 400; // examples a cell lists; the title says how many there are

QString metricName(const std::string& key) {
    const auto description = spec::describe_metric(key);
    return QString::fromStdString(description ? description->label : key);
}

QTableWidgetItem* numberItem(double value, int decimals) {
    auto* item = new QTableWidgetItem(QString::number(value, 'f', decimals));
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

} // namespace

struct EvaluationView::Job {
    std::atomic<bool> cancel{false};
    std::atomic<int64_t> done{0};
    std::atomic<int64_t> total{0};
};

EvaluationView::EvaluationView(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("evaluationView"));
    title_ = new QLabel(this);
    title_->setObjectName(QStringLiteral("evaluationTitle"));
    title_->setProperty("class", QStringLiteral("sectionHeading"));
    metrics_ = new QLabel(this);
    metrics_->setObjectName(QStringLiteral("evaluationMetrics"));
    metrics_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    metrics_->setWordWrap(true);
    progress_ = new QProgressBar(this);
    progress_->setObjectName(QStringLiteral("evaluationProgress"));
    progress_->setMaximumWidth(260);
    cancelButton_ = new QPushButton(tr("Cancel"), this);
    cancelButton_->setObjectName(QStringLiteral("evaluationCancel"));
    connect(cancelButton_, &QPushButton::clicked, this, &EvaluationView::cancel);
    progress_->hide();
    cancelButton_->hide();
    auto* top = new QHBoxLayout;
    top->addWidget(title_, 1);
    top->addWidget(progress_);
    top->addWidget(cancelButton_);

    message_ = new QLabel(tr("Choose a checkpoint to evaluate."), this);
    message_->setObjectName(QStringLiteral("evaluationMessage"));
    message_->setProperty("class", QStringLiteral("viewMessage"));
    message_->setAlignment(Qt::AlignCenter);
    message_->setWordWrap(true);
    message_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    // Classification: the matrix left, the details right.
    classificationPage_ = new QWidget(this);
    normalized_ = new QCheckBox(tr("Row-normalised (share of each true class)"), this);
    normalized_->setObjectName(QStringLiteral("evaluationNormalized"));
    matrix_ = new ConfusionMatrixWidget(this);
    connect(normalized_, &QCheckBox::toggled, matrix_, &ConfusionMatrixWidget::setNormalized);
    connect(matrix_, &ConfusionMatrixWidget::cellClicked, this, &EvaluationView::showCell);
    auto* matrixPane = new QWidget(this);
    auto* matrixLayout = new QVBoxLayout(matrixPane);
    matrixLayout->setContentsMargins(0, 0, 0, 0);
    matrixLayout->addWidget(normalized_);
    matrixLayout->addWidget(matrix_, 1);

    cellTitle_ = new QLabel(tr("Click a cell of the matrix to see its examples."), this);
    cellTitle_->setObjectName(QStringLiteral("evaluationCellTitle"));
    cellHint_ = new QLabel(this);
    cellHint_->setObjectName(QStringLiteral("evaluationCellHint"));
    cellHint_->setProperty("class", QStringLiteral("recentPath")); // small, faint
    cellList_ = new QListWidget(this);
    cellList_->setObjectName(QStringLiteral("evaluationCellExamples"));
    cellList_->setIconSize(QSize(kThumbnail, kThumbnail));
    cellList_->setUniformItemSizes(true);
    cellList_->setResizeMode(QListView::Adjust);
    connect(cellList_, &QListWidget::itemDoubleClicked, this, [this](QListWidgetItem* item) {
        emit exampleActivated(item->data(Qt::UserRole).toLongLong());
    });
    auto* cellPane = new QWidget(this);
    auto* cellLayout = new QVBoxLayout(cellPane);
    cellLayout->addWidget(cellTitle_);
    cellLayout->addWidget(cellHint_);
    cellLayout->addWidget(cellList_, 1);

    perClass_ = makeTable(QStringLiteral("evaluationPerClass"),
                          {tr("Class"), tr("Precision"), tr("Recall"), tr("F1"), tr("Support")});
    topLoss_ =
        makeTable(QStringLiteral("evaluationTopLoss"),
                  {tr("Example"), tr("True"), tr("Predicted"), tr("p"), tr("p true"), tr("Loss")});
    topLoss_->setIconSize(QSize(40, 40));
    topLoss_->horizontalHeaderItem(3)->setToolTip(tr("The probability of the predicted class"));
    topLoss_->horizontalHeaderItem(4)->setToolTip(tr("The probability of the true class"));
    tabs_ = new QTabWidget(this);
    tabs_->setObjectName(QStringLiteral("evaluationDetails"));
    tabs_->addTab(cellPane, tr("Examples in cell"));
    tabs_->addTab(perClass_, tr("Per class"));
    tabs_->addTab(topLoss_, tr("Highest loss"));
    split_ = new QSplitter(Qt::Horizontal, classificationPage_);
    auto* split = split_;
    split->addWidget(matrixPane);
    split->addWidget(tabs_);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    auto* classificationLayout = new QVBoxLayout(classificationPage_);
    classificationLayout->setContentsMargins(0, 0, 0, 0);
    classificationLayout->addWidget(split);

    regressionPage_ = new QWidget(this);
    scatter_ = new QCustomPlot(regressionPage_);
    scatter_->setObjectName(QStringLiteral("evaluationScatter"));
    residuals_ = new QCustomPlot(regressionPage_);
    residuals_->setObjectName(QStringLiteral("evaluationResiduals"));
    regressionTopLoss_ =
        makeTable(QStringLiteral("evaluationRegressionTopLoss"),
                  {tr("Example"), tr("True"), tr("Predicted"), tr("Residual"), tr("Loss")});
    auto* right = new QSplitter(Qt::Vertical, regressionPage_);
    right->addWidget(residuals_);
    right->addWidget(regressionTopLoss_);
    auto* regressionSplit = new QSplitter(Qt::Horizontal, regressionPage_);
    regressionSplit->addWidget(scatter_);
    regressionSplit->addWidget(right);
    regressionSplit->setStretchFactor(0, 3);
    regressionSplit->setStretchFactor(1, 2);
    auto* regressionLayout = new QVBoxLayout(regressionPage_);
    regressionLayout->setContentsMargins(0, 0, 0, 0);
    regressionLayout->addWidget(regressionSplit);
    connect(regressionTopLoss_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
        emit exampleActivated(regressionTopLoss_->item(row, 0)->data(Qt::UserRole).toLongLong());
    });
    connect(topLoss_, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
        emit exampleActivated(topLoss_->item(row, 0)->data(Qt::UserRole).toLongLong());
    });

    stack_ = new QStackedWidget(this);
    stack_->addWidget(message_);
    stack_->addWidget(classificationPage_);
    stack_->addWidget(regressionPage_);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(metrics_);
    layout->addWidget(stack_, 1);

    progressTimer_ = new QTimer(this);
    progressTimer_->setInterval(100);
    connect(progressTimer_, &QTimer::timeout, this, &EvaluationView::updateProgress);
}

EvaluationView::~EvaluationView() {
    if (job_) job_->cancel = true;
    if (watcher_) watcher_->waitForFinished();
}

bool EvaluationView::isRunning() const {
    return watcher_ && watcher_->isRunning();
}

void EvaluationView::cancel() {
    if (job_) job_->cancel = true;
}

QString EvaluationView::message() const {
    return stack_->currentWidget() == message_ ? message_->text() : QString();
}

QString EvaluationView::metricsText() const {
    return metrics_->text();
}

void EvaluationView::evaluate(const io::Project& project, const QString& projectDir,
                              const QString& checkpointPath) {
    if (watcher_) { // one evaluation at a time: the newest wins
        job_->cancel = true;
        watcher_->disconnect(this);
        watcher_->waitForFinished();
        watcher_->deleteLater();
        watcher_ = nullptr;
    }
    evaluation_.reset();
    dataset_.reset();
    listed_.clear();
    checkpointName_ = QFileInfo(checkpointPath).fileName();
    title_->setText(tr("Evaluating %1").arg(checkpointName_));
    metrics_->clear();
    waiting_ = false;
    showMessage(tr("Loading the checkpoint and the data…"));
    job_ = std::make_shared<Job>();
    progress_->setRange(0, 0); // busy until the batches are known
    progress_->show();
    cancelButton_->show();
    cancelButton_->setEnabled(true);
    progressTimer_->start();

    auto job = job_;
    const io::Project copy = project;
    const std::filesystem::path dir = projectDir.toStdString();
    const std::filesystem::path checkpoint = checkpointPath.toStdString();
    watcher_ = new QFutureWatcher<Outcome>(this);
    connect(watcher_, &QFutureWatcher<Outcome>::finished, this, &EvaluationView::onFinished);
    watcher_->setFuture(QtConcurrent::run([job, copy, dir, checkpoint]() {
        Outcome outcome;
        try {
            auto trainer = train::trainer_for_checkpoint(copy, dir, checkpoint);
            if (job->cancel) return outcome;
            data::DatasetPtr dataset = train::evaluation_dataset(*trainer);
            train::EvaluationOptions options;
            options.progress = [job](int64_t done, int64_t total) {
                job->total = total;
                job->done = done;
            };
            options.cancelled = [job] { return job->cancel.load(); };
            auto e = std::make_shared<train::Evaluation>(
                train::evaluate_examples(*trainer, dataset, options));
            if (!e->cancelled) {
                outcome.evaluation = std::move(e);
                outcome.dataset = std::move(dataset);
            }
        } catch (const std::exception& e) {
            outcome.error = QString::fromUtf8(e.what());
        }
        return outcome;
    }));
}

void EvaluationView::updateProgress() {
    if (!job_) return;
    const int64_t total = job_->total, done = job_->done;
    if (total <= 0) return;
    progress_->setRange(0, int(total));
    progress_->setValue(int(done));
    progress_->setFormat(tr("%1 / %2 batches").arg(done).arg(total));
}

void EvaluationView::onFinished() {
    progressTimer_->stop();
    progress_->hide();
    cancelButton_->hide();
    const Outcome outcome = watcher_->result();
    watcher_->deleteLater();
    watcher_ = nullptr;
    if (!outcome.error.isEmpty()) {
        title_->setText(tr("%1 could not be evaluated").arg(checkpointName_));
        showMessage(outcome.error);
    } else if (!outcome.evaluation) {
        title_->setText(tr("Evaluation of %1 cancelled").arg(checkpointName_));
        showMessage(tr("The evaluation was cancelled; nothing is shown."));
    } else {
        evaluation_ = outcome.evaluation;
        dataset_ = outcome.dataset;
        showResults();
    }
    emit finished();
}

void EvaluationView::setCheckpointChosen(bool chosen) {
    if (!waiting_) return;
    message_->setText(chosen ? tr("Press Evaluate to run this checkpoint on its test data.")
                             : tr("Choose a checkpoint to evaluate."));
    stack_->setCurrentWidget(message_);
}

void EvaluationView::showMessage(const QString& text) {
    message_->setText(text);
    stack_->setCurrentWidget(message_);
}

void EvaluationView::showResults() {
    const train::Evaluation& e = *evaluation_;
    title_->setText(tr("%1 on the %2 data (%3 examples)")
                        .arg(checkpointName_, QString::fromStdString(e.split))
                        .arg(QLocale().toString(qlonglong(e.size))));
    QStringList parts;
    // The task's score first, then the rest as the metric table lists them, then any others.
    std::vector<std::string> order;
    for (const spec::MetricDescription& d : spec::metric_descriptions())
        if (d.score) order.push_back(d.name);
    for (const spec::MetricDescription& d : spec::metric_descriptions())
        if (!d.score) order.push_back(d.name);
    for (const auto& [key, value] : e.metrics)
        if (std::find(order.begin(), order.end(), key) == order.end()) order.push_back(key);
    for (const std::string& key : order)
        if (e.metrics.count(key))
            parts << QStringLiteral("%1 %2").arg(metricName(key)).arg(e.metrics.at(key), 0, 'f', 4);
    metrics_->setText(parts.join(QStringLiteral("  ·  ")));
    if (e.size == 0)
        return showMessage(tr("The %1 data has no examples.").arg(QString::fromStdString(e.split)));
    if (e.classification()) {
        matrix_->setMatrix(e.confusion);
        matrix_->setNormalized(normalized_->isChecked());
        cellList_->clear();
        cellTitle_->setText(tr("Click a cell of the matrix to see its examples."));
        cellHint_->clear();
        fillPerClass();
        fillTopLosses();
        stack_->setCurrentWidget(classificationPage_);
        // The matrix as wide as it is tall, the rest for the examples.
        const int total = split_->width();
        const int matrixWidth = std::min(total * 3 / 5, matrix_->widthForHeight(matrix_->height()) +
                                                            split_->handleWidth());
        if (total > 0 && matrixWidth > 0) split_->setSizes({matrixWidth, total - matrixWidth});
    } else {
        fillRegression();
        stack_->setCurrentWidget(regressionPage_);
    }
}

void EvaluationView::setNormalized(bool normalized) {
    normalized_->setChecked(normalized);
}

QIcon EvaluationView::thumbnail(int64_t example) const {
    const QImage image = eval::exampleImage(dataset_->get(example).input);
    if (image.isNull()) return {};
    return QIcon(QPixmap::fromImage(
        image.scaled(kThumbnail, kThumbnail, Qt::KeepAspectRatio, Qt::FastTransformation)));
}

// "#12" for a picture (the icon shows it); "#12: 1.2, 0.4, …" for other inputs.
QString EvaluationView::exampleCaption(int64_t example) const {
    const Tensor input = dataset_->get(example).input;
    if (eval::isImageInput(input)) return QStringLiteral("#%1").arg(example);
    return QStringLiteral("#%1: %2").arg(example).arg(eval::exampleValuesText(input, 6));
}

void EvaluationView::showCell(int trueClass, int predictedClass) {
    if (!evaluation_ || !evaluation_->classification()) return;
    const train::Evaluation& e = *evaluation_;
    if (trueClass < 0 || predictedClass < 0 || trueClass >= e.num_classes() ||
        predictedClass >= e.num_classes())
        return;
    matrix_->selectCell(trueClass, predictedClass);
    std::vector<int64_t> examples = e.cell(trueClass, predictedClass);
    // The most confident predictions first: for a mistake, the worst ones.
    std::stable_sort(examples.begin(), examples.end(), [&](int64_t a, int64_t b) {
        return e.probability(a, predictedClass) > e.probability(b, predictedClass);
    });
    const size_t all = examples.size();
    if (examples.size() > size_t(kMostListed)) examples.resize(size_t(kMostListed));
    listed_ = examples;
    const QString t = eval::classLabel(e.class_names, trueClass);
    const QString p = eval::classLabel(e.class_names, predictedClass);
    QString title = all == 1 ? tr("True %1, predicted %2: 1 example").arg(t, p)
                             : tr("True %1, predicted %2: %3 examples").arg(t, p).arg(all);
    if (all > examples.size()) title += tr(" (the %1 most confident)").arg(examples.size());
    cellTitle_->setText(title);
    cellHint_->setText(
        all == 0 ? QString()
                 : tr("p: the probability of %1 · double-click an example to try it").arg(p));

    const bool images = !examples.empty() && eval::isImageInput(dataset_->get(examples[0]).input);
    cellList_->setViewMode(images ? QListView::IconMode : QListView::ListMode);
    cellList_->setGridSize(images ? QSize(kThumbnail + 30, kThumbnail + 40) : QSize());
    cellList_->setWordWrap(images);
    cellList_->clear();
    for (int64_t i : examples) {
        auto* item = new QListWidgetItem(
            QStringLiteral("%1\np %2")
                .arg(exampleCaption(i), eval::probabilityText(e.probability(i, predictedClass))),
            cellList_);
        if (!images) item->setText(item->text().replace(QLatin1Char('\n'), QStringLiteral("   ")));
        if (images) item->setIcon(thumbnail(i));
        item->setData(Qt::UserRole, qlonglong(i));
        // The three most probable classes in the tooltip.
        std::vector<int64_t> order(size_t(e.num_classes()));
        for (size_t c = 0; c < order.size(); ++c)
            order[c] = int64_t(c);
        std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
            return e.probability(i, a) > e.probability(i, b);
        });
        QStringList top;
        for (size_t k = 0; k < order.size() && k < 3; ++k)
            top << QStringLiteral("%1 %2").arg(eval::classLabel(e.class_names, order[k]),
                                               eval::probabilityText(e.probability(i, order[k])));
        item->setToolTip(
            tr("Example %1 (true: %2)\n%3").arg(i).arg(t, top.join(QLatin1Char('\n'))));
    }
    tabs_->setCurrentIndex(0);
}

void EvaluationView::fillPerClass() {
    const train::Evaluation& e = *evaluation_;
    perClass_->setRowCount(int(e.num_classes()));
    for (int c = 0; c < int(e.num_classes()); ++c) {
        const train::ClassScores& s = e.per_class[size_t(c)];
        perClass_->setItem(c, 0, new QTableWidgetItem(eval::classLabel(e.class_names, c)));
        perClass_->setItem(c, 1, numberItem(s.precision, 4));
        perClass_->setItem(c, 2, numberItem(s.recall, 4));
        perClass_->setItem(c, 3, numberItem(s.f1, 4));
        perClass_->setItem(c, 4, numberItem(double(s.support), 0));
    }
    perClass_->resizeColumnsToContents();
}

void EvaluationView::fillTopLosses() {
    const train::Evaluation& e = *evaluation_;
    topLoss_->setRowCount(int(e.top_losses.size()));
    for (int row = 0; row < int(e.top_losses.size()); ++row) {
        const int64_t i = e.top_losses[size_t(row)];
        const int64_t t = e.targets[size_t(i)], p = e.predicted[size_t(i)];
        auto* example = new QTableWidgetItem(thumbnail(i), exampleCaption(i));
        example->setData(Qt::UserRole, qlonglong(i));
        topLoss_->setItem(row, 0, example);
        topLoss_->setItem(row, 1, new QTableWidgetItem(eval::classLabel(e.class_names, t)));
        topLoss_->setItem(row, 2, new QTableWidgetItem(eval::classLabel(e.class_names, p)));
        topLoss_->setItem(row, 3, numberItem(e.probability(i, p), 3));
        topLoss_->setItem(row, 4, numberItem(e.probability(i, t), 3));
        topLoss_->setItem(row, 5, numberItem(e.losses[size_t(i)], 4));
        topLoss_->setRowHeight(row, 46);
    }
    topLoss_->resizeColumnsToContents();
}

} // namespace myelin::ui
