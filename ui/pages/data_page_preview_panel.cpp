// The Data page's preview panel: the split sizes and input summary, the first training examples
// as pictures (ExampleGrid) or table rows, and the class balance or the target's distribution
// as a bar chart; shown for a finished preview, cleared for no project or a load error.
#include "pages/data_page.h"

#include "pages/data_page_preview.h"
#include "pages/page_text.h"
#include "widgets/attr_editor.h"
#include "widgets/theme.h"

#include <qcustomplot.h>

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QPushButton>
#include <QStackedWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace myelin::ui {

// The first training examples as pictures in a grid, each with its label below; the tile size
// follows the widget so all of them fit.
class ExampleGrid : public QWidget {
  public:
    explicit ExampleGrid(QWidget* parent) : QWidget(parent) {
        setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
    }
    void setExamples(std::vector<QImage> images, QStringList captions) {
        images_ = std::move(images);
        captions_ = std::move(captions);
        update();
    }
    int count() const { return int(images_.size()); }
    QSize sizeHint() const override { return {760, 330}; }
    QSize minimumSizeHint() const override { return {200, 120}; }

  protected:
    void paintEvent(QPaintEvent*) override {
        QPainter p(this);
        p.fillRect(rect(), colors::kSurface);
        const int n = count();
        if (n == 0) return;
        const int captionH = fontMetrics().height() + 4;
        const int gap = 10;
        // The column count that gives the largest tiles.
        int bestCols = 1, bestSide = 0;
        for (int cols = 1; cols <= n; ++cols) {
            const int rows = (n + cols - 1) / cols;
            const int side = std::min((width() - gap * (cols - 1)) / cols,
                                      (height() - rows * captionH - gap * (rows - 1)) / rows);
            if (side > bestSide) bestSide = side, bestCols = cols;
        }
        // Beyond 4x a picture shows no more detail, only less of the grid fits the eye.
        const QSize native = images_.front().size();
        const int side = std::min(bestSide, 4 * std::max(native.width(), native.height()));
        if (side < 8) return;
        const int cellW =
            std::max(side, std::min(side + 40, (width() - gap * (bestCols - 1)) / bestCols));
        p.setPen(colors::kText);
        for (int i = 0; i < n; ++i) {
            const int r = i / bestCols, c = i % bestCols;
            const int x = c * (cellW + gap), y = r * (side + captionH + gap);
            const QRect target(x + (cellW - side) / 2, y, side, side);
            p.drawImage(target, images_[size_t(i)]); // no smoothing: data pixels stay visible
            p.setPen(colors::kBorder);
            p.drawRect(target.adjusted(0, 0, -1, -1));
            p.setPen(colors::kText);
            const QRect text(x - gap / 2, y + side + 2, cellW + gap, captionH - 2);
            p.drawText(text, Qt::AlignHCenter | Qt::AlignTop,
                       fontMetrics().elidedText(captions_.value(i), Qt::ElideRight, text.width()));
        }
    }

  private:
    std::vector<QImage> images_;
    QStringList captions_;
};

QWidget* DataPage::buildPreview() {
    auto* panel = new QWidget(this);
    panel->setObjectName(QStringLiteral("dataPreviewPanel"));
    panel->setAttribute(Qt::WA_StyledBackground, true);
    auto* column = new QVBoxLayout(panel);
    column->setContentsMargins(18, 12, 18, 12);
    column->setSpacing(6);

    auto* header = new QHBoxLayout;
    header->addWidget(sectionHeading(tr("Preview"), panel));
    header->addStretch(1);
    status_ = new QLabel(panel);
    status_->setObjectName(QStringLiteral("dataStatus"));
    header->addWidget(status_);
    refresh_ = new QPushButton(tr("Refresh"), panel);
    refresh_->setObjectName(QStringLiteral("dataRefreshPreview"));
    refresh_->setToolTip(tr("Load the data again (files may have changed on disk)."));
    connect(refresh_, &QPushButton::clicked, this, &DataPage::refreshPreview);
    header->addWidget(refresh_);
    column->addLayout(header);

    summary_ = new QLabel(panel);
    summary_->setObjectName(QStringLiteral("dataSummary"));
    summary_->setTextFormat(Qt::RichText);
    summary_->setWordWrap(true);
    loaderFacts_ = new QLabel(panel);
    loaderFacts_->setObjectName(QStringLiteral("dataLoaderFacts"));
    loaderFacts_->setWordWrap(true);
    error_ = new QLabel(panel);
    error_->setObjectName(QStringLiteral("dataError"));
    error_->setWordWrap(true);
    error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    error_->hide();
    textStats_ = new QLabel(panel);
    textStats_->setObjectName(QStringLiteral("dataTextStats"));
    textStats_->setTextFormat(Qt::RichText);
    textStats_->setWordWrap(true);
    textStats_->hide();
    column->addWidget(summary_);
    column->addWidget(textStats_);
    column->addWidget(loaderFacts_);
    column->addWidget(error_);

    // Examples and chart, in a box hidden while there is nothing to show (no project, an error).
    previewSections_ = new QWidget(panel);
    auto* sections = new QVBoxLayout(previewSections_);
    sections->setContentsMargins(0, 0, 0, 0);
    sections->setSpacing(6);
    column->addWidget(previewSections_, 1);
    column->addStretch(0); // takes the space while the sections are hidden
    examplesCaption_ = sectionHeading(tr("Training examples (after transforms)"), panel);
    sections->addWidget(examplesCaption_);
    examples_ = new QStackedWidget(panel);
    grid_ = new ExampleGrid(examples_);
    grid_->setObjectName(QStringLiteral("dataPreviewGrid"));
    table_ = new QTableWidget(examples_);
    table_->setObjectName(QStringLiteral("dataPreviewTable"));
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionMode(QAbstractItemView::NoSelection);
    table_->verticalHeader()->setDefaultSectionSize(22);
    table_->horizontalHeader()->setDefaultAlignment(Qt::AlignRight | Qt::AlignVCenter);
    examplesNote_ = new QLabel(examples_);
    examplesNote_->setObjectName(QStringLiteral("dataExamplesNote"));
    examplesNote_->setAlignment(Qt::AlignCenter);
    examplesNote_->setWordWrap(true);
    examples_->addWidget(grid_);
    examples_->addWidget(table_);
    examples_->addWidget(examplesNote_);
    sections->addWidget(examples_, 3);

    // The class chart, and beside it a text source's length histogram.
    auto* charts = new QHBoxLayout;
    charts->setSpacing(14);
    auto* classColumn = new QVBoxLayout;
    classColumn->setSpacing(6);
    charts->addLayout(classColumn, 1);
    sections->addLayout(charts, 2);
    chartCaption_ = sectionHeading(tr("Class balance (training split)"), panel);
    classColumn->addWidget(chartCaption_);
    targetStats_ = new QLabel(panel);
    targetStats_->setObjectName(QStringLiteral("dataTargetStats"));
    targetStats_->setTextFormat(Qt::RichText);
    targetStats_->hide();
    classColumn->addWidget(targetStats_);
    chart_ = new QCustomPlot(panel);
    chart_->setObjectName(QStringLiteral("dataClassChart"));
    chart_->setMinimumHeight(200);
    stylePlot(chart_, {chart_->xAxis, chart_->yAxis});
    QFont tickFont = font();
    tickFont.setPointSizeF(std::max(7.0, font().pointSizeF() - 1));
    for (QCPAxis* axis : {chart_->xAxis, chart_->yAxis}) {
        axis->setSubTickPen(Qt::NoPen);
        axis->setTickLabelFont(tickFont);
        axis->setLabelFont(tickFont);
    }
    chart_->xAxis->grid()->setVisible(false);
    chart_->yAxis->setLabel(tr("examples"));
    classColumn->addWidget(chart_, 1);

    lengthSection_ = new QWidget(panel);
    auto* lengthColumn = new QVBoxLayout(lengthSection_);
    lengthColumn->setContentsMargins(0, 0, 0, 0);
    lengthColumn->setSpacing(6);
    lengthCaption_ = sectionHeading(tr("Tokens per example"), lengthSection_);
    lengthColumn->addWidget(lengthCaption_);
    lengthChart_ = new QCustomPlot(lengthSection_);
    lengthChart_->setObjectName(QStringLiteral("dataLengthChart"));
    lengthChart_->setMinimumHeight(200);
    stylePlot(lengthChart_, {lengthChart_->xAxis, lengthChart_->yAxis});
    for (QCPAxis* axis : {lengthChart_->xAxis, lengthChart_->yAxis}) {
        axis->setSubTickPen(Qt::NoPen);
        axis->setTickLabelFont(tickFont);
        axis->setLabelFont(tickFont);
    }
    lengthChart_->xAxis->grid()->setVisible(false);
    lengthChart_->xAxis->setLabel(tr("tokens"));
    lengthChart_->yAxis->setLabel(tr("examples"));
    lengthColumn->addWidget(lengthChart_, 1);
    lengthSection_->hide();
    charts->addWidget(lengthSection_, 1);
    return panel;
}

void DataPage::clearPreview(const QString& note) {
    summary_->setText(note);
    loaderFacts_->hide();
    grid_->setExamples({}, {});
    table_->clear();
    table_->setRowCount(0);
    table_->setColumnCount(0);
    examplesNote_->setText(QString());
    examples_->setCurrentWidget(examplesNote_);
    targetStats_->hide();
    chart_->clearPlottables();
    chart_->clearItems();
    chart_->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
    chart_->xAxis->setLabel(QString());
    chart_->replot();
    previewSections_->hide();
    error_->hide();
    textStats_->hide();
    lengthSection_->hide();
}

void DataPage::showPreviewError(const QString& message) {
    errorText_ = message;
    trainSize_ = 0;
    clearPreview(tr("No preview: the data could not be loaded."));
    error_->setText(message);
    error_->show();
    refreshLoaderFacts();
}

void DataPage::showPreview(const DataPreview& p) {
    errorText_.clear();
    error_->clear();
    error_->hide();
    previewSections_->show();
    trainSize_ = p.train;

    QStringList sizes;
    sizes << tr("<b>%1</b> training").arg(groupDigits(p.train));
    sizes << (p.validation >= 0 ? tr("<b>%1</b> validation").arg(groupDigits(p.validation))
                                : tr("no validation split"));
    sizes << (p.test >= 0 ? tr("<b>%1</b> test").arg(groupDigits(p.test)) : tr("no test split"));
    QString task =
        p.classNames.empty()       ? tr("regression of <b>%1</b>").arg(p.targetName.toHtmlEscaped())
        : p.classNames.size() == 1 ? tr("<b>1</b> class")
                                   : tr("<b>%1</b> classes").arg(int(p.classNames.size()));
    summary_->setText(sizes.join(QStringLiteral("  ·  ")) + QStringLiteral("<br>") +
                      tr("Input <tt>%1</tt> %2, values %3 … %4  ·  %5")
                          .arg(p.inputShape.toHtmlEscaped(), p.inputDtype, numberText(p.valueMin),
                               numberText(p.valueMax), task));
    refreshLoaderFacts();

    // Examples.
    grid_->setExamples(p.images, p.captions);
    table_->clear();
    table_->setRowCount(0);
    table_->setColumnCount(0);
    textStats_->hide();
    lengthSection_->hide();
    table_->horizontalHeader()->setDefaultAlignment(Qt::AlignRight | Qt::AlignVCenter);
    if (p.isText) {
        showTextPreview(p);
    } else if (!p.images.empty()) {
        examplesCaption_->setText(
            tr("First %1 training examples, as the model sees them (after transforms)")
                .arg(int(p.images.size()))
                .toUpper());
        examples_->setCurrentWidget(grid_);
    } else if (!p.rows.empty()) {
        examplesCaption_->setText(
            tr("First %1 training rows (after transforms)").arg(int(p.rows.size())).toUpper());
        table_->setColumnCount(int(p.columns.size()));
        table_->setHorizontalHeaderLabels(p.columns);
        table_->setRowCount(int(p.rows.size()));
        for (int r = 0; r < int(p.rows.size()); ++r)
            for (int c = 0; c < int(p.rows[size_t(r)].size()); ++c) {
                auto* item = new QTableWidgetItem(p.rows[size_t(r)][c]);
                item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
                if (c == int(p.columns.size()) - 1) {
                    QFont bold = item->font();
                    bold.setBold(true);
                    item->setFont(bold); // the target
                }
                table_->setItem(r, c, item);
            }
        // A few columns share the width; many keep their own and scroll.
        table_->horizontalHeader()->setSectionResizeMode(
            p.columns.size() <= 12 ? QHeaderView::Stretch : QHeaderView::ResizeToContents);
        examples_->setCurrentWidget(table_);
    } else {
        examplesCaption_->setText(tr("Training examples").toUpper());
        examplesNote_->setText(p.examplesNote.isEmpty() ? tr("The training split is empty.")
                                                        : p.examplesNote);
        examples_->setCurrentWidget(examplesNote_);
    }

    // Class balance, or the target's distribution for regression.
    chart_->clearPlottables();
    chart_->clearItems();
    auto* bars = new QCPBars(chart_->xAxis, chart_->yAxis);
    bars->setPen(Qt::NoPen);
    bars->setBrush(colors::kAccent);
    double top = 0;
    if (!p.classNames.empty()) {
        chartCaption_->setText(tr("Class balance (training split)").toUpper());
        targetStats_->hide();
        QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
        QVector<double> keys, values;
        for (size_t c = 0; c < p.classNames.size(); ++c) {
            const double count = c < p.classCounts.size() ? double(p.classCounts[c]) : 0.0;
            keys << double(c);
            values << count;
            ticker->addTick(double(c), QString::fromStdString(p.classNames[c]));
            top = std::max(top, count);
        }
        bars->setWidth(0.7);
        bars->setData(keys, values, true);
        chart_->xAxis->setTicker(ticker);
        // Slanted names when they would not fit side by side (many classes, or a narrow
        // chart beside a text source's length histogram).
        const QFontMetrics metrics(chart_->xAxis->tickLabelFont());
        int namesWidth = 0;
        for (const std::string& name : p.classNames)
            namesWidth += metrics.horizontalAdvance(QString::fromStdString(name)) + 8;
        const int chartWidth = p.isText ? previewSections_->width() / 2 : previewSections_->width();
        chart_->xAxis->setTickLabelRotation(
            p.classNames.size() > 12 || namesWidth > chartWidth - 60 ? 35 : 0);
        chart_->xAxis->setLabel(QString());
        chart_->xAxis->setRange(-0.6, double(p.classNames.size()) - 0.4);
        // Counts above the bars while they fit.
        if (p.classNames.size() <= 20)
            for (int c = 0; c < int(keys.size()); ++c) {
                auto* label = new QCPItemText(chart_);
                label->position->setCoords(keys[c], values[c]);
                label->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
                label->setText(groupDigits(int64_t(values[c])));
                label->setColor(colors::kMutedText);
                label->setFont(chart_->xAxis->tickLabelFont());
                label->setPadding(QMargins(0, 0, 0, 2));
            }
    } else {
        chartCaption_->setText(
            tr("Distribution of %1 (training split)").arg(p.targetName).toUpper());
        targetStats_->setText(
            tr("min <b>%1</b>  ·  mean <b>%2</b>  ·  max <b>%3</b>")
                .arg(numberText(p.targetMin), numberText(p.targetMean), numberText(p.targetMax)));
        targetStats_->show();
        QVector<double> keys(p.histogramCenters.begin(), p.histogramCenters.end());
        QVector<double> values(p.histogramCounts.begin(), p.histogramCounts.end());
        for (double v : values)
            top = std::max(top, v);
        bars->setWidth(p.histogramWidth * 0.92);
        bars->setData(keys, values, true);
        chart_->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        chart_->xAxis->setTickLabelRotation(0);
        chart_->xAxis->setLabel(p.targetName);
        if (!keys.isEmpty())
            chart_->xAxis->setRange(keys.front() - p.histogramWidth,
                                    keys.back() + p.histogramWidth);
    }
    chart_->yAxis->setRange(0, std::max(1.0, top * 1.15));
    chart_->replot();
}

int DataPage::previewImageCount() const {
    return grid_->count();
}

} // namespace myelin::ui
