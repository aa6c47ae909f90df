#pragma once
// The read-only tables of the eval room (metrics, per class, layers, top losses): rows selected
// whole, no editing, no row numbers, the last column stretched.
#include <QHeaderView>
#include <QStringList>
#include <QTableWidget>

namespace myelin::ui {

inline QTableWidget* makeTable(const QString& name, const QStringList& headers) {
    auto* table = new QTableWidget(0, int(headers.size()));
    table->setObjectName(name);
    table->setHorizontalHeaderLabels(headers);
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->setSelectionBehavior(QAbstractItemView::SelectRows);
    table->verticalHeader()->hide();
    table->horizontalHeader()->setStretchLastSection(true);
    return table;
}

} // namespace myelin::ui
