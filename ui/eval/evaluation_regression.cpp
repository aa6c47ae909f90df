// The Evaluation view's regression page: predicted against true values with the y = x line,
// the histogram of the residuals and the examples of highest loss.
#include "eval/evaluation_view.h"

#include "eval/example_render.h"
#include "widgets/theme.h"

#include <QTableWidget>
#include <qcustomplot.h>

#include <algorithm>
#include <cmath>

namespace myelin::ui {

namespace {

constexpr int kBins = 40;

QTableWidgetItem* valueItem(double value) {
    auto* item = new QTableWidgetItem(QString::number(value, 'g', 5));
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

} // namespace

void EvaluationView::fillRegression() {
    const train::Evaluation& e = *evaluation_;
    // Every output element against its target (several outputs per example pool together, as
    // the metrics do).
    QVector<double> truth, predicted, residual;
    for (int64_t i = 0; i < e.size; ++i)
        for (int64_t k = 0; k < e.outputs_per_example; ++k) {
            const double t = e.target_value(i, k), p = e.output(i, k);
            if (!std::isfinite(t) || !std::isfinite(p)) continue;
            truth << t;
            predicted << p;
            residual << p - t;
        }

    scatter_->clearPlottables();
    stylePlot(scatter_, {scatter_->xAxis, scatter_->yAxis});
    scatter_->xAxis->setLabel(tr("True value"));
    scatter_->yAxis->setLabel(tr("Predicted value"));
    double low = 0, high = 1;
    if (!truth.isEmpty()) {
        low = std::min(*std::min_element(truth.begin(), truth.end()),
                       *std::min_element(predicted.begin(), predicted.end()));
        high = std::max(*std::max_element(truth.begin(), truth.end()),
                        *std::max_element(predicted.begin(), predicted.end()));
        if (high <= low) high = low + 1;
    }
    QCPGraph* identity = scatter_->addGraph();
    identity->setName(tr("y = x"));
    identity->setPen(QPen(colors::kValidationCurve, 1.5, Qt::DashLine));
    identity->setData({low, high}, {low, high});
    QCPGraph* points = scatter_->addGraph();
    points->setName(tr("examples"));
    points->setLineStyle(QCPGraph::lsNone);
    QColor fill = colors::kAccent;
    fill.setAlpha(120);
    points->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, fill, fill, 5));
    points->setData(truth, predicted);
    const double margin = (high - low) * 0.04;
    scatter_->xAxis->setRange(low - margin, high + margin);
    scatter_->yAxis->setRange(low - margin, high + margin);
    scatter_->replot();

    residuals_->clearPlottables();
    stylePlot(residuals_, {residuals_->xAxis, residuals_->yAxis});
    residuals_->xAxis->setLabel(tr("Residual (predicted − true)"));
    residuals_->yAxis->setLabel(tr("Examples"));
    if (!residual.isEmpty()) {
        const double rmin = *std::min_element(residual.begin(), residual.end());
        const double rmax = *std::max_element(residual.begin(), residual.end());
        const double width = rmax > rmin ? (rmax - rmin) / kBins : 1.0;
        QVector<double> centres(kBins), counts(kBins, 0.0);
        for (int b = 0; b < kBins; ++b)
            centres[b] = rmin + (b + 0.5) * width;
        for (double r : residual)
            counts[std::clamp(int((r - rmin) / width), 0, kBins - 1)] += 1;
        auto* bars = new QCPBars(residuals_->xAxis, residuals_->yAxis);
        bars->setPen(Qt::NoPen);
        bars->setBrush(colors::kAccent);
        bars->setWidth(width * 0.9);
        bars->setData(centres, counts, true);
        residuals_->xAxis->setRange(rmin - width, rmax + width);
        residuals_->yAxis->setRange(0, *std::max_element(counts.begin(), counts.end()) * 1.08);
    }
    residuals_->replot();

    regressionTopLoss_->setRowCount(int(e.top_losses.size()));
    for (int row = 0; row < int(e.top_losses.size()); ++row) {
        const int64_t i = e.top_losses[size_t(row)];
        auto* example = new QTableWidgetItem(QStringLiteral("#%1: %2").arg(i).arg(
            eval::exampleValuesText(dataset_->get(i).input, 4)));
        example->setData(Qt::UserRole, qlonglong(i));
        regressionTopLoss_->setItem(row, 0, example);
        regressionTopLoss_->setItem(row, 1, valueItem(e.target_value(i, 0)));
        regressionTopLoss_->setItem(row, 2, valueItem(e.output(i, 0)));
        regressionTopLoss_->setItem(row, 3,
                                    valueItem(double(e.output(i, 0)) - e.target_value(i, 0)));
        regressionTopLoss_->setItem(row, 4, valueItem(e.losses[size_t(i)]));
    }
    regressionTopLoss_->resizeColumnsToContents();
}

} // namespace myelin::ui
