#include "editor/model_summary_panel.h"

#include "document/project_document.h"
#include "widgets/theme.h"

#include <myelin/cuda.h>
#include <myelin/error.h>
#include <myelin/train/memory_estimate.h>

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

namespace myelin::ui {

namespace {

constexpr int kNodeRole = Qt::UserRole + 1;
enum Column { kLayer, kKind, kShape, kParams, kFlops, kActivations, kColumnCount };

QString qs(const std::string& text) {
    return QString::fromStdString(text);
}

} // namespace

ModelSummaryPanel::ModelSummaryPanel(ProjectDocument* document, QWidget* parent)
    : QWidget(parent), document_(document) {
    setObjectName(QStringLiteral("modelSummaryPanel"));

    batchSize_ = new QSpinBox(this);
    batchSize_->setObjectName(QStringLiteral("summaryBatchSize"));
    batchSize_->setRange(1, 1 << 20);
    batchSize_->setValue(int(document_->project().data.batch_size));
    batchSize_->setKeyboardTracking(false);
    batchSize_->setToolTip(
        tr("Batch size the shapes, FLOPs and activation memory are computed for"));
    connect(batchSize_, &QSpinBox::valueChanged, this, &ModelSummaryPanel::refresh);

    totals_ = new QLabel(this);
    totals_->setObjectName(QStringLiteral("summaryTotals"));
    totals_->setTextFormat(Qt::RichText);

    auto* bar = new QHBoxLayout;
    bar->setContentsMargins(10, 6, 10, 6);
    bar->setSpacing(8);
    bar->addWidget(new QLabel(tr("Batch size"), this));
    bar->addWidget(batchSize_);
    bar->addSpacing(16);
    bar->addWidget(totals_, 1);

    memory_ = new QLabel(this);
    memory_->setObjectName(QStringLiteral("summaryMemory"));
    memory_->setTextFormat(Qt::RichText);
    memory_->setWordWrap(true);
    memory_->setContentsMargins(10, 0, 10, 6);

    table_ = new QTableWidget(0, kColumnCount, this);
    table_->setObjectName(QStringLiteral("summaryTable"));
    table_->setHorizontalHeaderLabels({tr("Layer"), tr("Kind"), tr("Output shape"), tr("Params"),
                                       tr("FLOPs"), tr("Activations")});
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    table_->setSelectionMode(QAbstractItemView::SingleSelection);
    table_->setAlternatingRowColors(true);
    table_->setShowGrid(false);
    table_->setFrameShape(QFrame::NoFrame);
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->verticalHeader()->setDefaultSectionSize(22);
    for (int c = 0; c < kColumnCount; ++c)
        table_->horizontalHeaderItem(c)->setTextAlignment(
            c >= kParams ? Qt::AlignRight | Qt::AlignVCenter : Qt::AlignLeft | Qt::AlignVCenter);
    table_->setColumnWidth(kLayer, 170);
    table_->setColumnWidth(kKind, 130);
    table_->setColumnWidth(kShape, 170);
    table_->setColumnWidth(kParams, 100);
    table_->setColumnWidth(kFlops, 100);
    connect(table_, &QTableWidget::cellClicked, this, [this](int row, int) {
        if (QTableWidgetItem* item = table_->item(row, kLayer)) {
            const QVariant id = item->data(kNodeRole);
            if (id.isValid()) emit nodeActivated(id.toLongLong());
        }
    });

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addLayout(bar);
    layout->addWidget(memory_);
    layout->addWidget(table_, 1);

    connect(document_, &ProjectDocument::modelChanged, this, [this](bool layoutOnly) {
        if (!layoutOnly) refresh();
    });
    connect(document_, &ProjectDocument::projectReplaced, this, [this] {
        // Start from the batch size the project trains with.
        const QSignalBlocker blocker(batchSize_);
        batchSize_->setValue(int(document_->project().data.batch_size));
    });
    refresh();
}

void ModelSummaryPanel::refresh() {
    const graph::ModelSpec& spec = document_->spec();
    analysis_ = graph::analyze(spec, batchSize_->value());
    table_->setRowCount(0);
    if (!document_->isOpen()) {
        totals_->clear();
        return;
    }
    auto cell = [](const QString& text, bool number) {
        auto* item = new QTableWidgetItem(text);
        item->setTextAlignment(number ? Qt::AlignRight | Qt::AlignVCenter
                                      : Qt::AlignLeft | Qt::AlignVCenter);
        return item;
    };
    const QFont mono = QFont(QStringLiteral("DejaVu Sans Mono"), font().pointSize() - 1);
    for (size_t index : analysis_.order) {
        const graph::Node& node = spec.nodes[index];
        const graph::NodeInfo& info = analysis_.nodes[index];
        const int row = table_->rowCount();
        table_->insertRow(row);
        QString name =
            info.module_name.empty() ? qs(spec.display_name(node.id)) : qs(info.module_name);
        if (node.frozen) name += tr(" (frozen)");
        auto* layer = cell(name, false);
        layer->setData(kNodeRole, qlonglong(node.id));
        table_->setItem(row, kLayer, layer);
        table_->setItem(row, kKind, cell(qs(node.kind), false));
        QString shape = info.output ? qs(graph::to_string(*info.output)) : QStringLiteral("?");
        if (info.outputs.size() > 1) { // the other output ports by name, as format_summary
            const auto names = graph::output_port_names(node);
            for (size_t p = 1; p < info.outputs.size() && p < names.size(); ++p)
                shape += QStringLiteral(" · %1 %2")
                             .arg(qs(names[p]), qs(graph::to_string(info.outputs[p])));
        }
        if (!info.reachable) shape += tr("  (unused)");
        auto* shapeItem = cell(shape, false);
        shapeItem->setFont(mono);
        table_->setItem(row, kShape, shapeItem);
        table_->setItem(row, kParams, cell(qs(graph::format_count(info.params)), true));
        table_->setItem(row, kFlops, cell(qs(graph::format_si(info.flops)), true));
        table_->setItem(row, kActivations,
                        cell(info.activation_bytes > 0
                                 ? qs(graph::format_si(double(info.activation_bytes), "B"))
                                 : QStringLiteral("—"),
                             true));
        if (!info.reachable)
            for (int c = 0; c < kColumnCount; ++c)
                table_->item(row, c)->setForeground(colors::kMutedText);
    }
    // Totals.
    const int row = table_->rowCount();
    table_->insertRow(row);
    QFont bold = table_->font();
    bold.setBold(true);
    const QStringList totals = {
        tr("Total"),
        QString(),
        QString(),
        qs(graph::format_count(analysis_.total_params)),
        qs(graph::format_si(analysis_.total_flops)),
        qs(graph::format_si(double(analysis_.total_activation_bytes), "B"))};
    for (int c = 0; c < kColumnCount; ++c) {
        auto* item = cell(totals[c], c >= kParams);
        item->setFont(bold);
        item->setBackground(colors::kAccentSoft);
        table_->setItem(row, c, item);
    }
    totals_->setText(
        tr("<b>%1</b> parameters (%2 trainable)  ·  <b>%3</b> per batch  ·  <b>%4</b> of "
           "activations")
            .arg(qs(graph::format_count(analysis_.total_params)),
                 qs(graph::format_count(analysis_.trainable_params)),
                 qs(graph::format_si(analysis_.total_flops, "FLOPs")),
                 qs(graph::format_si(double(analysis_.total_activation_bytes), "B"))));
    refreshMemory();
}

void ModelSummaryPanel::refreshMemory() {
    memory_->clear();
    memory_->setToolTip(QString());
    if (!analysis_.ok()) return;
    const io::Project& project = document_->project();
    try {
        const Device device = parse_device(project.train.device);
        const train::MemoryVerdict v = train::check_training_memory(
            project, document_->dataDirectory().toStdString(), batchSize_->value(), device);
        QString text = tr("Training at batch size %1 on %2 needs about <b>%3</b>")
                           .arg(batchSize_->value())
                           .arg(qs(device.str()), qs(train::format_bytes(v.need)));
        if (v.available.bytes > 0)
            text += tr(" of %1 free  ·  the largest batch size that fits: %2")
                        .arg(qs(train::format_bytes(v.available.bytes)))
                        .arg(QLocale().toString(qlonglong(v.largest_batch)));
        if (v.fit != train::MemoryFit::Fits)
            text =
                QStringLiteral("<span style='color:%1'>%2<br>%3</span>")
                    .arg((v.fit == train::MemoryFit::DoesNotFit ? colors::kError : colors::kWarning)
                             .name(),
                         text, qs(v.message).toHtmlEscaped());
        memory_->setText(text);
        QStringList lines;
        for (const std::string& line : train::describe_memory(v.estimate))
            lines << qs(line).trimmed();
        memory_->setToolTip(lines.join(QLatin1Char('\n')));
    } catch (const Error& e) {
        memory_->setText(tr("Training memory: %1").arg(qs(e.what()).toHtmlEscaped()));
    }
}

} // namespace myelin::ui
