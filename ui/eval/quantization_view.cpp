#include "eval/quantization_view.h"
#include "eval/read_only_table.h"

#include "eval/confusion_matrix_widget.h"
#include "eval/example_render.h"
#include "widgets/theme.h"

#include <myelin/io/project.h>
#include <myelin/spec/components.h>
#include <myelin/train/trainer.h>

#include <QButtonGroup>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <numeric>

namespace myelin::ui {

namespace {

// Thrown from quantize_checkpoint's progress callback to stop calibration (it has no cancel
// callback of its own); not a std::exception, so it is never taken for an error.
struct Cancelled {};

enum Phase { kLoading, kCalibrating, kEvaluatingFloat, kEvaluatingInt8 };

QTableWidgetItem* rightItem(const QString& text) {
    auto* item = new QTableWidgetItem(text);
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

// A change, coloured by whether it is better (`sign` > 0), worse (< 0) or neither.
QTableWidgetItem* changeItem(const QString& text, int sign) {
    QTableWidgetItem* item = rightItem(text);
    if (sign > 0) item->setForeground(colors::kOk);
    if (sign < 0) item->setForeground(colors::kError);
    return item;
}

QString bytesText(int64_t bytes) {
    return QLocale().formattedDataSize(bytes, 1);
}

QString ratioText(double ratio) {
    return QStringLiteral("×%1").arg(ratio, 0, 'f', 2);
}

// Percentage points of a share's change ("+1.25 pt"); "0 pt" when unchanged.
QString pointsText(double change) {
    if (std::abs(change) < 1e-12) return QStringLiteral("0 pt");
    return QStringLiteral("%1%2 pt")
        .arg(change > 0 ? QStringLiteral("+") : QString())
        .arg(change * 100.0, 0, 'f', 2);
}

} // namespace

struct QuantizationView::Job {
    std::atomic<bool> cancel{false};
    std::atomic<int> phase{kLoading};
    std::atomic<int64_t> done{0};
    std::atomic<int64_t> total{0};
};

QuantizationView::QuantizationView(QWidget* parent) : QWidget(parent) {
    setObjectName(QStringLiteral("quantizationView"));
    scheme_ = new QComboBox(this);
    scheme_->setObjectName(QStringLiteral("quantizeScheme"));
    scheme_->addItem(tr("Static (calibrated activations)"), int(quant::Scheme::Static));
    scheme_->addItem(tr("Dynamic (activations per batch)"), int(quant::Scheme::Dynamic));
    scheme_->setToolTip(tr("Static: Conv2d and Linear layers in int8, their activation ranges "
                           "measured on training batches. Dynamic: Linear layers' weights in "
                           "int8, each batch's inputs quantized from their own range."));
    observer_ = new QComboBox(this);
    observer_->setObjectName(QStringLiteral("quantizeObserver"));
    for (quant::ObserverKind kind : quant::observer_kinds())
        observer_->addItem(QString::fromStdString(std::string(quant::observer_kind_name(kind))),
                           int(kind));
    observer_->setCurrentIndex(observer_->findData(int(quant::ObserverKind::Histogram)));
    observer_->setToolTip(tr("How the activation range of each layer is chosen from what the "
                             "calibration batches showed"));
    calibration_ = new QSpinBox(this);
    calibration_->setObjectName(QStringLiteral("quantizeCalibration"));
    calibration_->setRange(1, 100000);
    calibration_->setValue(int(train::QuantizeOptions{}.calibration_batches));
    calibration_->setSuffix(tr(" batches"));
    calibration_->setToolTip(tr("The training data's first batches the observers watch (at most "
                                "as many as it has)"));
    quantizeButton_ = new QPushButton(tr("Quantize"), this);
    quantizeButton_->setObjectName(QStringLiteral("quantizeButton"));
    quantizeButton_->setToolTip(tr("Write an int8 copy of the checkpoint beside it and compare "
                                   "the two on the test data"));
    progress_ = new QProgressBar(this);
    progress_->setObjectName(QStringLiteral("quantizeProgress"));
    progress_->setMinimumWidth(260);
    progress_->hide();
    cancelButton_ = new QPushButton(tr("Cancel"), this);
    cancelButton_->setObjectName(QStringLiteral("quantizeCancel"));
    cancelButton_->hide();
    auto* controls = new QHBoxLayout;
    controls->addWidget(new QLabel(tr("Scheme"), this));
    controls->addWidget(scheme_);
    controls->addSpacing(8);
    controls->addWidget(new QLabel(tr("Observer"), this));
    controls->addWidget(observer_);
    controls->addSpacing(8);
    controls->addWidget(new QLabel(tr("Calibration"), this));
    controls->addWidget(calibration_);
    controls->addSpacing(8);
    controls->addWidget(quantizeButton_);
    controls->addStretch(1);
    controls->addWidget(progress_);
    controls->addWidget(cancelButton_);

    title_ = new QLabel(this);
    title_->setObjectName(QStringLiteral("quantizeTitle"));
    title_->setProperty("class", QStringLiteral("sectionHeading"));
    title_->setWordWrap(true);
    written_ = new QLabel(this);
    written_->setObjectName(QStringLiteral("quantizeWritten"));
    written_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    written_->setWordWrap(true);
    message_ = new QLabel(this);
    message_->setObjectName(QStringLiteral("quantizeMessage"));
    message_->setProperty("class", QStringLiteral("viewMessage"));
    message_->setAlignment(Qt::AlignCenter);
    message_->setWordWrap(true);
    message_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    // Left: the confusion matrix of either model.
    matrixPane_ = new QWidget(this);
    auto* floatButton = new QPushButton(tr("Float32"), matrixPane_);
    floatButton->setObjectName(QStringLiteral("quantizeMatrixFloat"));
    auto* int8Button = new QPushButton(tr("Int8"), matrixPane_);
    int8Button->setObjectName(QStringLiteral("quantizeMatrixInt8"));
    which_ = new QButtonGroup(this);
    which_->setExclusive(true);
    for (QPushButton* b : {floatButton, int8Button}) {
        b->setCheckable(true);
        which_->addButton(b);
    }
    which_->setId(floatButton, 0);
    which_->setId(int8Button, 1);
    int8Button->setChecked(true);
    normalized_ = new QCheckBox(tr("Row-normalised"), matrixPane_);
    normalized_->setObjectName(QStringLiteral("quantizeNormalized"));
    matrix_ = new ConfusionMatrixWidget(matrixPane_);
    matrix_->setObjectName(QStringLiteral("quantizeMatrix"));
    cellNote_ = new QLabel(tr("Click a cell to compare its count under both models."), this);
    cellNote_->setObjectName(QStringLiteral("quantizeCellNote"));
    cellNote_->setWordWrap(true);
    auto* switchRow = new QHBoxLayout;
    switchRow->addWidget(new QLabel(tr("Confusion matrix of"), matrixPane_));
    switchRow->addWidget(floatButton);
    switchRow->addWidget(int8Button);
    switchRow->addStretch(1);
    switchRow->addWidget(normalized_);
    auto* matrixLayout = new QVBoxLayout(matrixPane_);
    matrixLayout->setContentsMargins(0, 0, 0, 0);
    matrixLayout->addLayout(switchRow);
    matrixLayout->addWidget(matrix_, 1);
    matrixLayout->addWidget(cellNote_);
    connect(which_, &QButtonGroup::idClicked, this, [this](int id) { showInt8Matrix(id == 1); });
    connect(normalized_, &QCheckBox::toggled, matrix_, &ConfusionMatrixWidget::setNormalized);
    connect(matrix_, &ConfusionMatrixWidget::cellClicked, this, &QuantizationView::showCellCounts);

    // Right: the side-by-side numbers, then per class and per layer.
    summary_ = makeTable(QStringLiteral("quantizeSummary"),
                         {QString(), tr("Float32"), tr("Int8"), tr("Change")});
    summary_->setSelectionMode(QAbstractItemView::NoSelection);
    sizeNote_ = new QLabel(tr("Model tensors: the weights and buffers the model computes with. "
                              "The float checkpoint file also holds the optimizer's state; the "
                              "int8 file holds the model alone. Examples/s: one timed pass over "
                              "the test data each, loading excluded."),
                           this);
    sizeNote_->setObjectName(QStringLiteral("quantizeSizeNote"));
    sizeNote_->setProperty("class", QStringLiteral("recentPath")); // small, faint
    sizeNote_->setWordWrap(true);
    perClass_ = makeTable(QStringLiteral("quantizePerClass"),
                          {tr("Class"), tr("Support"), tr("Float32 recall"), tr("Int8 recall"),
                           tr("Change"), tr("Predictions changed")});
    perClass_->horizontalHeaderItem(5)->setToolTip(
        tr("Examples of this class the int8 model predicts differently from the float one"));
    layers_ = makeTable(QStringLiteral("quantizeLayers"),
                        {tr("Layer"), tr("Kind"), tr("Runs in"), tr("Details")});
    layers_->setWordWrap(false);
    tabs_ = new QTabWidget(this);
    tabs_->setObjectName(QStringLiteral("quantizeDetails"));
    tabs_->addTab(perClass_, tr("Per class"));
    tabs_->addTab(layers_, tr("Layers"));
    auto* numbersPane = new QWidget(this);
    auto* numbersLayout = new QVBoxLayout(numbersPane);
    numbersLayout->setContentsMargins(0, 0, 0, 0);
    numbersLayout->addWidget(summary_);
    numbersLayout->addWidget(sizeNote_);
    numbersLayout->addWidget(tabs_, 1);

    resultsSplit_ = new QSplitter(Qt::Horizontal, this);
    resultsSplit_->addWidget(matrixPane_);
    resultsSplit_->addWidget(numbersPane);
    resultsSplit_->setStretchFactor(0, 2);
    resultsSplit_->setStretchFactor(1, 3);
    resultsSplit_->hide();

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(controls);
    layout->addWidget(title_);
    layout->addWidget(written_);
    layout->addWidget(message_, 1);
    layout->addWidget(resultsSplit_, 1);

    connect(scheme_, &QComboBox::currentIndexChanged, this, &QuantizationView::updateControls);
    connect(quantizeButton_, &QPushButton::clicked, this, &QuantizationView::quantizeRequested);
    connect(cancelButton_, &QPushButton::clicked, this, &QuantizationView::cancel);
    progressTimer_ = new QTimer(this);
    progressTimer_->setInterval(100);
    connect(progressTimer_, &QTimer::timeout, this, &QuantizationView::updateProgress);
    title_->hide();
    written_->hide();
    updateControls();
}

QuantizationView::~QuantizationView() {
    if (job_) job_->cancel = true;
    if (watcher_) watcher_->waitForFinished();
}

QString QuantizationView::int8PathFor(const QString& checkpoint) {
    const QFileInfo info(checkpoint);
    return info.dir().filePath(info.completeBaseName() + QStringLiteral(".int8.safetensors"));
}

bool QuantizationView::isRunning() const {
    // Until onFinished has taken the result: a new job must not replace the watcher before.
    return watcher_ != nullptr;
}

void QuantizationView::cancel() {
    if (job_) job_->cancel = true;
    cancelButton_->setEnabled(false);
}

QString QuantizationView::message() const {
    return message_->isHidden() ? QString() : message_->text();
}

void QuantizationView::setCheckpointChosen(bool chosen) {
    chosen_ = chosen;
    updateControls();
}

void QuantizationView::setBlockedReason(const QString& reason) {
    blocked_ = reason;
    updateControls();
}

void QuantizationView::updateControls() {
    const bool running = isRunning();
    const bool isStatic = scheme_->currentData().toInt() == int(quant::Scheme::Static);
    // Dynamic quantization measures each batch as it comes: nothing to calibrate.
    observer_->setEnabled(isStatic && !running);
    calibration_->setEnabled(isStatic && !running);
    scheme_->setEnabled(!running);
    quantizeButton_->setEnabled(chosen_ && blocked_.isEmpty() && !running);
    quantizeButton_->setToolTip(blocked_.isEmpty() ? tr("Write an int8 copy of the checkpoint "
                                                        "beside it and compare the two on the "
                                                        "test data")
                                                   : blocked_);
    if (running || results_ || !title_->isHidden()) return; // a job, results or its error
    showMessage(!blocked_.isEmpty() ? blocked_
                : chosen_
                    ? tr("Press Quantize to write an int8 copy of this checkpoint beside it and "
                         "compare the two on its test data.")
                    : tr("Choose a float checkpoint to quantize."));
}

void QuantizationView::showMessage(const QString& text) {
    message_->setText(text);
    resultsSplit_->hide();
    message_->show();
}

void QuantizationView::quantize(const io::Project& project, const QString& projectDir,
                                const QString& checkpointPath) {
    if (isRunning()) return;
    result_.reset();
    float_.reset();
    int8_.reset();
    results_ = false;
    checkpoint_ = checkpointPath;
    int8Path_ = int8PathFor(checkpointPath);
    title_->setText(tr("Quantizing %1").arg(QFileInfo(checkpointPath).fileName()));
    title_->show();
    written_->hide();
    showMessage(tr("Loading the checkpoint and the data…"));

    train::QuantizeOptions options;
    options.scheme = quant::Scheme(scheme_->currentData().toInt());
    options.observer = quant::ObserverKind(observer_->currentData().toInt());
    options.calibration_batches = calibration_->value();
    job_ = std::make_shared<Job>();
    auto job = job_;
    options.progress = [job](int64_t done, int64_t total) {
        job->phase = kCalibrating;
        job->total = total;
        job->done = done;
        if (job->cancel) throw Cancelled{};
    };
    progress_->setRange(0, 0); // busy until the batches are known
    progress_->setFormat(QString());
    progress_->show();
    cancelButton_->setEnabled(true);
    cancelButton_->show();
    progressTimer_->start();

    const io::Project copy = project;
    const std::filesystem::path dir = projectDir.toStdString();
    const std::filesystem::path input = checkpointPath.toStdString();
    const std::filesystem::path output = int8Path_.toStdString();
    watcher_ = new QFutureWatcher<Outcome>(this);
    connect(watcher_, &QFutureWatcher<Outcome>::finished, this, &QuantizationView::onFinished);
    watcher_->setFuture(QtConcurrent::run([job, copy, dir, input, output, options]() {
        Outcome outcome;
        // One timed pass over the evaluation data; null when cancelled.
        auto evaluate = [&](const std::filesystem::path& checkpoint, Phase phase,
                            double& seconds) -> std::shared_ptr<train::Evaluation> {
            if (job->cancel) return {};
            job->done = 0;
            job->total = 0;
            job->phase = phase;
            auto trainer = train::trainer_for_checkpoint(copy, dir, checkpoint);
            data::DatasetPtr dataset = train::evaluation_dataset(*trainer);
            train::EvaluationOptions o;
            o.top_losses = 0;
            o.progress = [job](int64_t done, int64_t total) {
                job->total = total;
                job->done = done;
            };
            o.cancelled = [job] { return job->cancel.load(); };
            {
                // An untimed pass over the first examples first, so neither model's rate
                // includes the one-off set-up (oneDNN primitives, the thread team).
                std::vector<int64_t> first(size_t(std::min<int64_t>(dataset->size(), 512)));
                std::iota(first.begin(), first.end(), int64_t(0));
                train::EvaluationOptions warm;
                warm.cancelled = o.cancelled;
                train::evaluate_examples(
                    *trainer, std::make_shared<data::Subset>(dataset, std::move(first)), warm);
            }
            const auto start = std::chrono::steady_clock::now();
            auto e =
                std::make_shared<train::Evaluation>(train::evaluate_examples(*trainer, dataset, o));
            seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            if (e->cancelled) return {};
            return e;
        };
        try {
            outcome.result = std::make_shared<train::QuantizeResult>(
                train::quantize_checkpoint(copy, dir, input, output, options));
            outcome.written = true;
            outcome.floatEval = evaluate(input, kEvaluatingFloat, outcome.floatSeconds);
            if (outcome.floatEval)
                outcome.int8Eval = evaluate(output, kEvaluatingInt8, outcome.int8Seconds);
        } catch (const Cancelled&) {
            // Stopped during calibration: quantize_checkpoint wrote nothing.
        } catch (const std::exception& e) {
            outcome.error = QString::fromUtf8(e.what());
        }
        return outcome;
    }));
    updateControls();
}

void QuantizationView::updateProgress() {
    if (!job_) return;
    const int64_t total = job_->total, done = job_->done;
    QString what, doing;
    switch (job_->phase.load()) {
    case kLoading:
        what = tr("Quantizing");
        doing = tr("Loading the checkpoint and the data…");
        break;
    case kCalibrating:
        what = tr("Calibrating");
        doing = tr("Measuring each layer's activation range on the training data…");
        break;
    case kEvaluatingFloat:
        what = tr("Evaluating float32");
        doing = tr("Evaluating the float32 model on the test data…");
        break;
    default:
        what = tr("Evaluating int8");
        doing = tr("Evaluating the int8 model on the test data…");
        break;
    }
    if (message_->text() != doing) message_->setText(doing);
    if (total <= 0) {
        progress_->setRange(0, 0);
        progress_->setFormat(what);
        return;
    }
    progress_->setRange(0, int(total));
    progress_->setValue(int(done));
    progress_->setFormat(tr("%1: %2 / %3 batches").arg(what).arg(done).arg(total));
}

void QuantizationView::onFinished() {
    progressTimer_->stop();
    progress_->hide();
    cancelButton_->hide();
    const Outcome outcome = watcher_->result();
    watcher_->deleteLater();
    watcher_ = nullptr;
    job_.reset();
    const QString name = QFileInfo(checkpoint_).fileName();
    if (outcome.written) {
        written_->setText(
            tr("Int8 checkpoint written to %1").arg(QDir::toNativeSeparators(int8Path_)));
        written_->show();
    }
    if (!outcome.error.isEmpty()) {
        title_->setText(tr("%1 could not be quantized").arg(name));
        if (outcome.written) title_->setText(tr("%1 could not be evaluated").arg(name));
        showMessage(outcome.error);
    } else if (!outcome.int8Eval) {
        title_->setText(tr("Quantization of %1 cancelled").arg(name));
        showMessage(outcome.written ? tr("Cancelled before both models were evaluated; nothing "
                                         "is compared.")
                                    : tr("Cancelled during calibration; nothing was written."));
    } else {
        result_ = outcome.result;
        float_ = outcome.floatEval;
        int8_ = outcome.int8Eval;
        floatSeconds_ = outcome.floatSeconds;
        int8Seconds_ = outcome.int8Seconds;
        showResults();
    }
    updateControls();
    emit finished();
}

void QuantizationView::showResults() {
    results_ = true;
    const quant::QuantizationPlan& plan = result_->plan;
    const QString how = plan.scheme == quant::Scheme::Static
                            ? tr("static, %1 observer, %n calibration batch(es)", nullptr,
                                 int(plan.calibration_batches))
                                  .arg(QString::fromStdString(
                                      std::string(quant::observer_kind_name(plan.observer))))
                            : tr("dynamic");
    title_->setText(tr("%1: float32 and int8 (%2) on the %3 data (%4 examples)")
                        .arg(QFileInfo(checkpoint_).fileName(), how,
                             QString::fromStdString(float_->split),
                             QLocale().toString(qlonglong(float_->size))));
    fillSummary();
    fillLayers();
    const bool classification = float_->classification() && int8_->classification();
    matrixPane_->setVisible(classification);
    tabs_->setTabVisible(tabs_->indexOf(perClass_), classification);
    if (classification) {
        fillPerClass();
        showInt8Matrix(showsInt8Matrix());
        cellNote_->setText(tr("Click a cell to compare its count under both models."));
    } else {
        tabs_->setCurrentWidget(layers_);
    }
    message_->hide();
    resultsSplit_->show();
    if (classification) { // the matrix as wide as it is tall, the rest for the numbers
        const int total = resultsSplit_->width();
        const int matrixWidth = std::min(total / 2, matrix_->widthForHeight(matrix_->height()) +
                                                        resultsSplit_->handleWidth());
        if (total > 0 && matrixWidth > 0)
            resultsSplit_->setSizes({matrixWidth, total - matrixWidth});
    }
}

void QuantizationView::fillSummary() {
    const train::Evaluation& f = *float_;
    const train::Evaluation& q = *int8_;
    summary_->setRowCount(0);
    auto addRow = [this](const QString& label, const QString& a, const QString& b,
                         QTableWidgetItem* change) {
        const int row = summary_->rowCount();
        summary_->insertRow(row);
        summary_->setItem(row, 0, new QTableWidgetItem(label));
        summary_->setItem(row, 1, rightItem(a));
        summary_->setItem(row, 2, rightItem(b));
        summary_->setItem(row, 3, change ? change : rightItem(QString()));
        return row;
    };
    // The metrics in the order the studio lists them (the task's score first), then any others.
    std::vector<spec::MetricDescription> order;
    for (const spec::MetricDescription& d : spec::metric_descriptions())
        if (d.score) order.push_back(d);
    for (const spec::MetricDescription& d : spec::metric_descriptions())
        if (!d.score) order.push_back(d);
    for (const auto& [key, value] : f.metrics)
        if (std::none_of(order.begin(), order.end(), [&](const auto& d) { return d.name == key; }))
            order.push_back({key, key, true, spec::MetricTask::Any, false, false});
    for (const spec::MetricDescription& d : order) {
        if (!f.metrics.count(d.name) || !q.metrics.count(d.name)) continue;
        const double a = f.metrics.at(d.name), b = q.metrics.at(d.name);
        const double change = b - a;
        const int sign =
            std::abs(change) < 1e-12 ? 0 : ((change > 0) == d.higher_is_better ? 1 : -1);
        // A classification score is a share: its change in percentage points.
        const QString text = d.task == spec::MetricTask::Classification
                                 ? pointsText(change)
                                 : QStringLiteral("%1%2")
                                       .arg(change > 0 ? QStringLiteral("+") : QString())
                                       .arg(change, 0, 'g', 3);
        addRow(QString::fromStdString(d.label), QString::number(a, 'f', 4),
               QString::number(b, 'f', 4), changeItem(text, sign));
    }
    if (f.classification() && q.classification() && f.size == q.size && f.size > 0) {
        int64_t same = 0;
        for (size_t i = 0; i < f.predicted.size(); ++i)
            same += f.predicted[i] == q.predicted[i];
        const int row =
            addRow(tr("Same prediction as float32"), QString(),
                   QStringLiteral("%1 %").arg(100.0 * double(same) / double(f.size), 0, 'f', 2),
                   rightItem(tr("%1 of %2").arg(same).arg(f.size)));
        summary_->item(row, 0)->setToolTip(
            tr("Examples the int8 model puts in the same class as the float one"));
    }
    const double tensorRatio =
        result_->float_bytes > 0 ? double(result_->int8_bytes) / double(result_->float_bytes) : 0;
    int row = addRow(tr("Model tensors"), bytesText(result_->float_bytes),
                     bytesText(result_->int8_bytes), changeItem(ratioText(tensorRatio), 0));
    summary_->item(row, 1)->setToolTip(tr("%1 bytes").arg(result_->float_bytes));
    summary_->item(row, 2)->setToolTip(tr("%1 bytes").arg(result_->int8_bytes));
    const qint64 floatFile = QFileInfo(checkpoint_).size(), int8File = QFileInfo(int8Path_).size();
    row = addRow(
        tr("Checkpoint file on disk"), bytesText(floatFile), bytesText(int8File),
        changeItem(floatFile > 0 ? ratioText(double(int8File) / double(floatFile)) : QString(), 0));
    summary_->item(row, 0)->setToolTip(
        tr("%1 and %2: the float file also holds the optimizer's state")
            .arg(QFileInfo(checkpoint_).fileName(), QFileInfo(int8Path_).fileName()));
    const double floatRate = floatSeconds_ > 0 ? double(f.size) / floatSeconds_ : 0;
    const double int8Rate = int8Seconds_ > 0 ? double(q.size) / int8Seconds_ : 0;
    const double speedup = floatRate > 0 ? int8Rate / floatRate : 0;
    addRow(tr("Examples/s"), QLocale().toString(floatRate, 'f', 0),
           QLocale().toString(int8Rate, 'f', 0),
           changeItem(ratioText(speedup), speedup > 1.0 ? 1 : (speedup < 1.0 ? -1 : 0)));
    summary_->resizeColumnsToContents();
    // Every row in sight: the table is the view's headline.
    int height = summary_->horizontalHeader()->sizeHint().height() + 2 * summary_->frameWidth();
    for (int r = 0; r < summary_->rowCount(); ++r)
        height += summary_->rowHeight(r);
    summary_->setFixedHeight(height);
}

void QuantizationView::fillPerClass() {
    const train::Evaluation& f = *float_;
    const train::Evaluation& q = *int8_;
    const int classes = int(std::min(f.num_classes(), q.num_classes()));
    std::vector<int64_t> changed(size_t(classes), 0);
    for (size_t i = 0; i < f.predicted.size() && i < q.predicted.size(); ++i)
        if (f.predicted[i] != q.predicted[i] && f.targets[i] < classes)
            ++changed[size_t(f.targets[i])];
    perClass_->setRowCount(classes);
    for (int c = 0; c < classes; ++c) {
        const double a = f.per_class[size_t(c)].recall, b = q.per_class[size_t(c)].recall;
        const double change = b - a;
        perClass_->setItem(c, 0, new QTableWidgetItem(eval::classLabel(f.class_names, c)));
        perClass_->setItem(c, 1, rightItem(QString::number(f.per_class[size_t(c)].support)));
        perClass_->setItem(c, 2, rightItem(QString::number(a, 'f', 4)));
        perClass_->setItem(c, 3, rightItem(QString::number(b, 'f', 4)));
        perClass_->setItem(
            c, 4,
            changeItem(pointsText(change), std::abs(change) < 1e-12 ? 0 : (change > 0 ? 1 : -1)));
        perClass_->setItem(c, 5, rightItem(QString::number(changed[size_t(c)])));
    }
    perClass_->resizeColumnsToContents();
}

void QuantizationView::fillLayers() {
    const quant::QuantizationPlan& plan = result_->plan;
    layers_->setRowCount(0);
    auto addRow = [this](const std::string& module, const std::string& kind, const QString& in,
                         const QString& details) {
        const int row = layers_->rowCount();
        layers_->insertRow(row);
        layers_->setItem(row, 0, new QTableWidgetItem(QString::fromStdString(module)));
        layers_->setItem(row, 1, new QTableWidgetItem(QString::fromStdString(kind)));
        layers_->setItem(row, 2, new QTableWidgetItem(in));
        layers_->setItem(row, 3, new QTableWidgetItem(details));
        layers_->item(row, 3)->setToolTip(details);
    };
    for (const quant::QuantizedLayer& layer : plan.layers) {
        QStringList details;
        QStringList fused;
        if (!layer.bn_module.empty())
            fused << tr("BatchNorm %1 folded").arg(QString::fromStdString(layer.bn_module));
        if (layer.relu) fused << tr("ReLU %1 fused").arg(QString::fromStdString(layer.relu_module));
        if (!layer.pool_module.empty())
            fused << tr("max pool %1 on int8").arg(QString::fromStdString(layer.pool_module));
        if (!fused.isEmpty()) details << fused.join(QStringLiteral(" · "));
        if (plan.scheme == quant::Scheme::Static)
            details << tr("input scale %1, zero point %2 · output scale %3, zero point %4")
                           .arg(double(layer.input.scale), 0, 'g', 4)
                           .arg(layer.input.zero_point)
                           .arg(double(layer.output.scale), 0, 'g', 4)
                           .arg(layer.output.zero_point);
        else
            details << tr("inputs quantized per batch");
        addRow(layer.module, layer.kind, tr("int8"), details.join(QLatin1Char('\n')));
    }
    for (const quant::FloatLayer& layer : plan.float_layers)
        addRow(layer.module, layer.kind, tr("float32"), QString::fromStdString(layer.reason));
    // One line per detail (what is fused, the activation parameters).
    for (int c = 0; c < 3; ++c)
        layers_->resizeColumnToContents(c);
    layers_->resizeRowsToContents();
}

void QuantizationView::showInt8Matrix(bool int8) {
    which_->button(int8 ? 1 : 0)->setChecked(true);
    const train::Evaluation* e = int8 ? int8_.get() : float_.get();
    if (!e || !e->classification()) return;
    const auto selected = matrix_->selectedCell();
    matrix_->setMatrix(e->confusion);
    matrix_->setNormalized(normalized_->isChecked());
    if (selected) matrix_->selectCell(selected->first, selected->second);
}

bool QuantizationView::showsInt8Matrix() const {
    return which_->checkedId() == 1;
}

void QuantizationView::showCellCounts(int trueClass, int predictedClass) {
    if (!float_ || !int8_ || !float_->classification()) return;
    const int64_t classes = std::min(float_->num_classes(), int8_->num_classes());
    if (trueClass < 0 || predictedClass < 0 || trueClass >= classes || predictedClass >= classes)
        return;
    matrix_->selectCell(trueClass, predictedClass);
    cellNote_->setText(tr("True %1, predicted %2: %3 with float32, %4 with int8.")
                           .arg(eval::classLabel(float_->class_names, trueClass),
                                eval::classLabel(float_->class_names, predictedClass))
                           .arg(float_->confusion.at(trueClass, predictedClass))
                           .arg(int8_->confusion.at(trueClass, predictedClass)));
}

} // namespace myelin::ui
