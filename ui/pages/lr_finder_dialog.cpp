#include "pages/lr_finder_dialog.h"

#include "widgets/theme.h"

#include <myelin/error.h>

#include <qcustomplot.h>

#include <QDialogButtonBox>
#include <QFuture>
#include <QLabel>
#include <QPushButton>
#include <QShowEvent>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <cmath>
#include <vector>

namespace myelin::ui {

namespace {

QString number(double v) {
    return QString::number(v, 'g', 3);
}

} // namespace

// What the worker shares with the dialog: the points so far, the cancel request, the outcome.
struct LrFinderDialog::Job {
    std::mutex mutex;
    std::vector<double> lrs, losses;
    std::atomic<bool> cancel{false};
    std::atomic<bool> done{false};
    train::LrFindResult result;
    QString error;
    QFuture<void> future;
};

LrFinderDialog::LrFinderDialog(const io::Project& project, const QString& projectDir,
                               double currentLr, QWidget* parent)
    : QDialog(parent), project_(project), projectDir_(projectDir), currentLr_(currentLr) {
    setObjectName(QStringLiteral("lrFinderDialog"));
    setWindowTitle(tr("Find Learning Rate"));
    setModal(true);
    resize(780, 560);

    auto* intro = new QLabel(
        tr("Up to 100 steps on a fresh copy of the model with the learning rate growing from "
           "10⁻⁷ to 10, until the loss diverges (Smith's range test). The project's schedule is "
           "left out; nothing is saved."),
        this);
    intro->setWordWrap(true);

    plot_ = new QCustomPlot(this);
    plot_->setObjectName(QStringLiteral("lrFinderPlot"));
    plot_->setMinimumHeight(260);
    stylePlot(plot_, {plot_->xAxis, plot_->yAxis});
    plot_->xAxis->setScaleType(QCPAxis::stLogarithmic);
    plot_->xAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
    plot_->xAxis->setLabel(tr("learning rate"));
    plot_->yAxis->setLabel(tr("loss"));
    plot_->xAxis->setRange(1e-7, 10);
    plot_->yAxis->setRange(0, 1);
    raw_ = plot_->addGraph();
    raw_->setName(tr("loss"));
    raw_->setPen(QPen(colors::kFaintText, 1));
    smoothed_ = plot_->addGraph();
    smoothed_->setName(tr("smoothed"));
    smoothed_->setPen(QPen(colors::kAccent, 2));
    plot_->legend->setVisible(true);
    plot_->legend->setFont(QFont(plot_->font().family(), 8));
    plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);

    status_ = new QLabel(tr("Starting…"), this);
    status_->setObjectName(QStringLiteral("lrFinderStatus"));
    status_->setWordWrap(true);
    status_->setTextFormat(Qt::RichText);
    status_->setMinimumHeight(status_->fontMetrics().lineSpacing() * 3);

    auto* buttons = new QDialogButtonBox(this);
    useSteepest_ = buttons->addButton(tr("Use steepest"), QDialogButtonBox::AcceptRole);
    useSteepest_->setObjectName(QStringLiteral("useSteepestLr"));
    useMinimum_ = buttons->addButton(tr("Use minimum / 10"), QDialogButtonBox::AcceptRole);
    useMinimum_->setObjectName(QStringLiteral("useMinimumLr"));
    close_ = buttons->addButton(QDialogButtonBox::Cancel);
    useSteepest_->setEnabled(false);
    useMinimum_->setEnabled(false);
    connect(useSteepest_, &QPushButton::clicked, this, [this] {
        emit learningRateChosen(result_.steepest_lr);
        accept();
    });
    connect(useMinimum_, &QPushButton::clicked, this, [this] {
        emit learningRateChosen(result_.min_over_10);
        accept();
    });
    connect(close_, &QPushButton::clicked, this, &LrFinderDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addWidget(plot_, 1);
    layout->addWidget(status_);
    layout->addWidget(buttons);

    timer_ = new QTimer(this);
    timer_->setInterval(100);
    connect(timer_, &QTimer::timeout, this, &LrFinderDialog::poll);
}

LrFinderDialog::~LrFinderDialog() {
    if (job_) {
        job_->cancel = true;
        job_->future.waitForFinished();
    }
}

void LrFinderDialog::showEvent(QShowEvent* event) {
    QDialog::showEvent(event);
    if (!started_) start();
}

void LrFinderDialog::setRecording(const QString& storePath, const QString& projectPath) {
    storePath_ = storePath;
    projectPath_ = projectPath;
}

void LrFinderDialog::start() {
    if (started_) return;
    started_ = true;
    job_ = std::make_shared<Job>();
    auto job = job_;
    const io::Project project = project_;
    const std::string dir = projectDir_.toStdString();
    const std::string store = storePath_.toStdString(), projectPath = projectPath_.toStdString();
    job->future = QtConcurrent::run([job, project, dir, store, projectPath] {
        train::LrFindOptions options;
        options.store_path = store;
        options.project_path = projectPath;
        options.progress = [job](int64_t, double lr, double loss) {
            std::lock_guard lock(job->mutex);
            job->lrs.push_back(lr);
            job->losses.push_back(loss);
        };
        options.cancelled = [job] { return job->cancel.load(); };
        try {
            job->result = train::find_learning_rate(project, dir, options);
        } catch (const std::exception& e) {
            job->error = QString::fromStdString(e.what());
        }
        job->done = true;
    });
    timer_->start();
}

bool LrFinderDialog::running() const {
    return job_ && !job_->done;
}

void LrFinderDialog::poll() {
    if (!job_) return;
    {
        std::lock_guard lock(job_->mutex);
        QVector<double> x(job_->lrs.begin(), job_->lrs.end());
        QVector<double> y(job_->losses.begin(), job_->losses.end());
        raw_->setData(x, y, true);
        status_->setText(tr("Step %1 of up to 100 · learning rate %2")
                             .arg(x.size())
                             .arg(x.isEmpty() ? QStringLiteral("—") : number(x.back())));
    }
    plot_->yAxis->rescale();
    plot_->replot(QCustomPlot::rpQueuedReplot);
    if (job_->done) onFinished();
}

void LrFinderDialog::onFinished() {
    timer_->stop();
    result_ = job_->result;
    error_ = job_->error;
    if (!error_.isEmpty()) {
        status_->setText(QStringLiteral("<span style='color:%1'>%2</span>")
                             .arg(colors::kError.name(), error_.toHtmlEscaped()));
        emit finished();
        return;
    }
    QVector<double> x(result_.lrs.begin(), result_.lrs.end());
    raw_->setData(x, QVector<double>(result_.losses.begin(), result_.losses.end()), true);
    smoothed_->setData(x, QVector<double>(result_.smoothed.begin(), result_.smoothed.end()), true);
    // The y range of the smoothed curve up to where it left its lowest point by 4x: the raw
    // losses of a diverged run would squash it.
    double low = INFINITY, high = -INFINITY;
    size_t lowest = 0;
    for (size_t i = 0; i < result_.smoothed.size(); ++i) {
        const double v = result_.smoothed[i];
        if (std::isfinite(v) && v <= 4 * std::max(low, 1e-12)) {
            if (v < low) lowest = i;
            low = std::min(low, v);
            high = std::max(high, v);
        }
    }
    // The raw losses up to the smoothed minimum stay in view too (a batch's loss falls below
    // the running average there); the spikes after it may leave the plot.
    for (size_t i = 0; i <= lowest && i < result_.losses.size(); ++i)
        if (std::isfinite(result_.losses[i])) low = std::min(low, result_.losses[i]);
    if (std::isfinite(low) && high > low)
        plot_->yAxis->setRange(low - 0.05 * (high - low), high + 0.1 * (high - low));
    if (!x.isEmpty()) {
        plot_->xAxis->setRange(x.front(), x.back());
        setLogTicks(plot_->xAxis);
    }
    // The steepest point's label to the left of its line, the other's to the right: they are
    // often close together.
    auto mark = [&](double lr, const QString& text, const QColor& color, Qt::Alignment side) {
        if (!(lr > 0)) return;
        auto* line = new QCPItemStraightLine(plot_);
        line->point1->setCoords(lr, 0);
        line->point2->setCoords(lr, 1);
        line->setPen(QPen(color, 1, Qt::DashLine));
        auto* label = new QCPItemText(plot_);
        label->position->setType(QCPItemPosition::ptPlotCoords);
        label->position->setCoords(lr, plot_->yAxis->range().upper);
        label->setPositionAlignment(Qt::AlignTop | side);
        label->setText(text);
        label->setColor(color);
        label->setFont(QFont(plot_->font().family(), 8));
    };
    mark(result_.steepest_lr, tr("steepest %1 ").arg(number(result_.steepest_lr)), colors::kOk,
         Qt::AlignRight);
    mark(result_.min_over_10, tr(" min/10 %1").arg(number(result_.min_over_10)), colors::kWarning,
         Qt::AlignLeft);
    plot_->replot();
    const bool suggested = result_.steepest_lr > 0;
    useSteepest_->setEnabled(suggested);
    useMinimum_->setEnabled(suggested);
    if (suggested) {
        useSteepest_->setText(tr("Use %1").arg(number(result_.steepest_lr)));
        useSteepest_->setToolTip(tr("Where the loss falls fastest"));
        useMinimum_->setText(tr("Use %1").arg(number(result_.min_over_10)));
        useMinimum_->setToolTip(tr("A tenth of where the loss is lowest"));
    }
    status_->setText(summaryText());
    emit finished();
}

QString LrFinderDialog::summaryText() const {
    QString text = QString::fromStdString(result_.note).toHtmlEscaped();
    if (result_.steepest_lr > 0)
        text +=
            tr("<br>Suggested: <b>%1</b> where the loss falls fastest, or <b>%2</b> (a "
               "tenth of where it is lowest). The project's learning rate is %3.")
                .arg(number(result_.steepest_lr), number(result_.min_over_10), number(currentLr_));
    return text;
}

void LrFinderDialog::reject() {
    if (job_ && !job_->done) {
        job_->cancel = true;
        job_->future.waitForFinished();
    }
    QDialog::reject();
}

} // namespace myelin::ui
