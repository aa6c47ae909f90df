#include "shell/backends_dialog.h"

#include <myelin/cuda.h>
#include <myelin/device.h>

#include <QDialogButtonBox>
#include <QFormLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace myelin::ui {

BackendsDialog::BackendsDialog(QWidget* parent) : QDialog(parent) {
    setObjectName(QStringLiteral("backendsDialog"));
    setWindowTitle(tr("Compute Backends"));

    const std::vector<BackendInfo> backends = available_backends();

    auto* intro = new QLabel(tr("Backends available to this process. Training runs on one of "
                                "them; the CPU backend is always present."),
                             this);
    intro->setWordWrap(true);

    auto* table = new QTableWidget(static_cast<int>(backends.size()), 3, this);
    table->setObjectName(QStringLiteral("backendsTable"));
    table->setHorizontalHeaderLabels({tr("Backend"), tr("Device"), tr("Details")});
    table->verticalHeader()->hide();
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->setSelectionBehavior(QAbstractItemView::SelectRows);
    table->setAlternatingRowColors(true);
    table->setShowGrid(false);
    table->horizontalHeader()->setStretchLastSection(true);
    table->horizontalHeader()->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    for (int row = 0; row < static_cast<int>(backends.size()); ++row) {
        const BackendInfo& b = backends[static_cast<size_t>(row)];
        table->setItem(row, 0, new QTableWidgetItem(QString::fromStdString(b.name)));
        table->setItem(row, 1, new QTableWidgetItem(QString::fromLatin1(device_type_name(b.type))));
        table->setItem(row, 2, new QTableWidgetItem(QString::fromStdString(b.details)));
    }
    table->resizeColumnsToContents();
    table->setColumnWidth(0, table->columnWidth(0) + 24);
    table->setColumnWidth(1, table->columnWidth(1) + 24);
    table->setFocusPolicy(Qt::NoFocus);
    table->setCurrentCell(-1, -1);
    table->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    table->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    int tableHeight = table->horizontalHeader()->sizeHint().height() + 2 * table->frameWidth();
    for (int row = 0; row < table->rowCount(); ++row)
        tableHeight += table->rowHeight(row);
    table->setFixedHeight(tableHeight);

    auto* threads = new QLabel(tr("%1, shared by Myelin's own loops, OpenBLAS and oneDNN "
                                  "(one OpenMP runtime)")
                                   .arg(get_num_threads()),
                               this);
    threads->setObjectName(QStringLiteral("threadsLabel"));
    threads->setWordWrap(true);

    // The CUDA backend's own lines: compiled in or not, then each device or why none is usable.
    QStringList cudaLines;
    for (const std::string& line : describe_devices()) {
        QString text = QString::fromStdString(line).trimmed();
        text.remove(QStringLiteral("CUDA backend: ")); // the row's label says CUDA
        text[0] = text[0].toUpper();
        cudaLines << text;
    }
    auto* cuda = new QLabel(cudaLines.join(QLatin1Char('\n')), this);
    cuda->setObjectName(QStringLiteral("cudaLabel"));
    cuda->setWordWrap(true);

    auto* facts = new QFormLayout;
    facts->setHorizontalSpacing(16);
    facts->setVerticalSpacing(8);
    facts->setLabelAlignment(Qt::AlignLeft | Qt::AlignTop);
    facts->addRow(tr("CPU threads:"), threads);
    facts->addRow(tr("CUDA:"), cuda);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(20, 18, 20, 16);
    layout->setSpacing(14);
    layout->addWidget(intro);
    layout->addWidget(table);
    layout->addLayout(facts);
    layout->addStretch(1);
    layout->addWidget(buttons);
    buttons->button(QDialogButtonBox::Close)->setFocus();

    resize(600, sizeHint().height());
}

} // namespace myelin::ui
