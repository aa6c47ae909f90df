// The Data page's preview of a text source: computed on the worker thread (tokenised examples
// per class, the vocabulary, <unk> on validation, tokens per example), shown as a table of
// examples, a line of vocabulary facts and a histogram of example lengths.
#include "pages/data_page.h"

#include "pages/data_page_preview.h"
#include "pages/page_text.h"
#include "widgets/theme.h"

#include <myelin/data/text.h>
#include <myelin/train/data_setup.h>

#include <qcustomplot.h>

#include <QHeaderView>
#include <QLabel>
#include <QStackedWidget>
#include <QTableWidget>

#include <algorithm>
#include <cmath>

namespace myelin::ui {

namespace {

constexpr int kRowsPerClass = 3;
constexpr int kMaxTextRows = 24;
constexpr int64_t kMaxLengthsCounted = 200'000; // the histogram reads at most this many examples
constexpr int kMaxLengthBins = 48;
constexpr int kMaxIdsShown = 32;

// A token as the table shows it: spaces and control characters made visible.
QString shownToken(const std::string& token) {
    if (token == " ") return QStringLiteral("␣");
    if (token == "\t") return QStringLiteral("⇥");
    return QString::fromStdString(token);
}

TextPreviewRow textRow(const data::TextEncoder& encoder, const std::string& className,
                       const std::string& text) {
    TextPreviewRow row;
    row.className = QString::fromStdString(className);
    row.text = QString::fromStdString(text);
    const std::vector<std::string> tokens = encoder.tokens(text);
    QStringList shown;
    for (size_t i = 0; i < tokens.size() && i < size_t(encoder.max_length()); ++i)
        shown << shownToken(tokens[i]);
    row.tokens = shown.join(QStringLiteral(" · "));
    int64_t length = 0;
    const std::vector<int64_t> ids = encoder.encode(text, &length);
    QStringList numbers;
    for (int64_t i = 0; i < std::min<int64_t>(length, kMaxIdsShown); ++i)
        numbers << QString::number(ids[size_t(i)]);
    if (length > kMaxIdsShown) numbers << QStringLiteral("…");
    if (length < encoder.max_length())
        numbers << QObject::tr("+ %1 × 0").arg(encoder.max_length() - length);
    if (int64_t(tokens.size()) > encoder.max_length())
        numbers << QObject::tr("(cut from %1)").arg(int64_t(tokens.size()));
    row.ids = numbers.join(QLatin1Char(' '));
    return row;
}

} // namespace

void computeTextPreview(const train::DataSplits& splits, DataPreview& out) {
    const data::TextEncoder& encoder = *splits.text_encoder;
    out.isText = true;
    out.tokenLevel = QString::fromLatin1(data::to_string(encoder.encoding().level));
    out.vocabularySize = encoder.vocabulary_size();
    out.maxLength = encoder.max_length();
    for (const std::string& note : splits.notes)
        out.notes << QString::fromStdString(note);

    // The first examples of each class in the training split.
    const data::Dataset& train = *splits.train;
    std::vector<int> perClass(splits.class_names.size(), 0);
    for (int64_t i = 0; i < train.size() && int(out.textRows.size()) < kMaxTextRows; ++i) {
        int64_t index = i;
        const data::TextDataset* text = data::find_text_dataset(train, &index);
        if (text == nullptr) return;
        const int64_t label = text->label(index);
        if (perClass[size_t(label)]++ >= kRowsPerClass) continue;
        out.textRows.push_back(
            textRow(encoder, splits.class_names[size_t(label)], text->text(index)));
    }
    std::stable_sort(out.textRows.begin(), out.textRows.end(),
                     [&](const TextPreviewRow& a, const TextPreviewRow& b) {
                         return a.className < b.className;
                     });

    // Tokens per training example before truncation.
    std::vector<int64_t> lengths;
    const int64_t counted = std::min(train.size(), kMaxLengthsCounted);
    lengths.reserve(size_t(counted));
    int64_t longest = 0;
    for (int64_t i = 0; i < counted; ++i) {
        int64_t index = i;
        const data::TextDataset* text = data::find_text_dataset(train, &index);
        const auto n = int64_t(encoder.tokens(text->text(index)).size());
        lengths.push_back(n);
        longest = std::max(longest, n);
        out.truncated += n > out.maxLength;
    }
    out.lengthsCounted = counted;
    const int64_t width = std::max<int64_t>(1, (longest + kMaxLengthBins) / kMaxLengthBins);
    const int64_t bins = longest / width + 1;
    out.lengthWidth = double(width);
    out.lengthCounts.assign(size_t(bins), 0.0);
    for (int64_t n : lengths)
        out.lengthCounts[size_t(n / width)] += 1;
    for (int64_t b = 0; b < bins; ++b)
        out.lengthCenters.push_back(double(b * width) + (double(width) - 1) / 2);

    // <unk> on validation: tokens the training split never gave the vocabulary.
    if (splits.validation) {
        int64_t tokens = 0, unknown = 0;
        const data::Dataset& validation = *splits.validation;
        for (int64_t i = 0; i < std::min(validation.size(), kMaxLengthsCounted); ++i) {
            int64_t index = i;
            const data::TextDataset* text = data::find_text_dataset(validation, &index);
            for (const std::string& t : encoder.tokens(text->text(index))) {
                ++tokens;
                unknown += encoder.id(t) == data::kUnkId;
            }
        }
        out.unknownRate = tokens > 0 ? double(unknown) / double(tokens) : 0.0;
    }
}

void DataPage::showTextPreview(const DataPreview& p) {
    QStringList facts;
    facts << tr("Vocabulary <b>%1</b> %2 tokens (with &lt;pad&gt; 0 and &lt;unk&gt; 1)")
                 .arg(groupDigits(p.vocabularySize), p.tokenLevel);
    facts << tr("<b>%1</b> ids per example").arg(p.maxLength);
    facts << (p.unknownRate >= 0 ? tr("&lt;unk&gt; on validation <b>%1 %</b>")
                                       .arg(QString::number(100.0 * p.unknownRate, 'f', 2))
                                 : tr("no validation split"));
    if (p.truncated > 0)
        facts << tr("<b>%1</b> training examples cut").arg(groupDigits(p.truncated));
    QString text = facts.join(QStringLiteral("  ·  "));
    for (const QString& note : p.notes)
        text += QStringLiteral("<br>") + note.toHtmlEscaped();
    textStats_->setText(text);
    textStats_->setToolTip(p.notes.join(QLatin1Char('\n')));
    textStats_->show();

    examplesCaption_->setText(
        tr("Training examples, tokenised (%1 per class)").arg(kRowsPerClass).toUpper());
    const QStringList columns{tr("class"), tr("text"), tr("tokens"), tr("ids")};
    table_->setColumnCount(int(columns.size()));
    table_->setHorizontalHeaderLabels(columns);
    table_->setRowCount(int(p.textRows.size()));
    for (int r = 0; r < int(p.textRows.size()); ++r) {
        const TextPreviewRow& row = p.textRows[size_t(r)];
        const QStringList cells{row.className, row.text, row.tokens, row.ids};
        for (int c = 0; c < int(cells.size()); ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            item->setTextAlignment(Qt::AlignLeft | Qt::AlignVCenter);
            item->setToolTip(cells[c]);
            table_->setItem(r, c, item);
        }
    }
    table_->horizontalHeader()->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);
    examples_->setCurrentWidget(table_);

    // Tokens per example, with the cut at max_length marked.
    lengthCaption_->setText(tr("Tokens per example (training split%1)")
                                .arg(p.lengthsCounted < p.train
                                         ? tr(", first %1").arg(groupDigits(p.lengthsCounted))
                                         : QString())
                                .toUpper());
    lengthChart_->clearPlottables();
    lengthChart_->clearItems();
    auto* bars = new QCPBars(lengthChart_->xAxis, lengthChart_->yAxis);
    bars->setPen(Qt::NoPen);
    bars->setBrush(colors::kAccent);
    bars->setWidth(p.lengthWidth * 0.85);
    const QVector<double> keys(p.lengthCenters.begin(), p.lengthCenters.end());
    const QVector<double> values(p.lengthCounts.begin(), p.lengthCounts.end());
    bars->setData(keys, values, true);
    double top = 1;
    for (double v : values)
        top = std::max(top, v);
    const double right = std::max(keys.isEmpty() ? 0.0 : keys.back(), double(p.maxLength));
    lengthChart_->xAxis->setRange(-0.5 * p.lengthWidth - 0.5, right + p.lengthWidth);
    lengthChart_->yAxis->setRange(0, top * 1.15);
    auto* cut = new QCPItemStraightLine(lengthChart_);
    cut->point1->setCoords(double(p.maxLength) + 0.5, 0);
    cut->point2->setCoords(double(p.maxLength) + 0.5, 1);
    cut->setPen(QPen(colors::kWarning, 1.5, Qt::DashLine));
    auto* cutLabel = new QCPItemText(lengthChart_);
    cutLabel->position->setType(QCPItemPosition::ptPlotCoords);
    cutLabel->position->setCoords(double(p.maxLength) + 0.5, top * 1.1);
    cutLabel->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
    cutLabel->setText(tr("max_length %1 ").arg(p.maxLength));
    cutLabel->setColor(colors::kWarningText);
    cutLabel->setFont(lengthChart_->xAxis->tickLabelFont());
    lengthChart_->replot();
    lengthSection_->show();
}

} // namespace myelin::ui
