#include "inspect/view_frame.h"

#include "widgets/theme.h"

#include <myelin/error.h>
#include <myelin/store/run_store.h>

#include <QFileInfo>
#include <QLabel>
#include <QLayout>
#include <QSplitter>
#include <QStackedWidget>
#include <QVBoxLayout>

namespace myelin::ui {

ViewFrame makeViewFrame(QWidget* view, QLayout* controls, QWidget* upper, QWidget* lower,
                        QLayout* below, const QString& messageName, Qt::Orientation orientation) {
    ViewFrame frame;
    auto* split = new QSplitter(orientation, view);
    split->addWidget(upper);
    split->addWidget(lower);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    frame.plots = new QWidget(view);
    auto* plotLayout = new QVBoxLayout(frame.plots);
    plotLayout->setContentsMargins(0, 0, 0, 0);
    plotLayout->addWidget(split, 1);
    if (below) plotLayout->addLayout(below);

    frame.message = new QLabel(view);
    frame.message->setObjectName(messageName);
    frame.message->setAlignment(Qt::AlignCenter);
    frame.message->setWordWrap(true);
    frame.message->setProperty("class", QStringLiteral("viewMessage"));
    frame.stack = new QStackedWidget(view);
    frame.stack->addWidget(frame.message);
    frame.stack->addWidget(frame.plots);

    auto* layout = new QVBoxLayout(view);
    layout->setContentsMargins(10, 8, 10, 8);
    layout->addLayout(controls);
    layout->addWidget(frame.stack, 1);
    return frame;
}

std::unique_ptr<store::RunStore> openStoreForReading(const QString& path, QString* error) {
    error->clear();
    if (path.isEmpty() || !QFileInfo::exists(path)) return nullptr;
    try {
        store::StoreOptions options;
        options.mark_interrupted_at_open = false;
        try {
            return std::make_unique<store::RunStore>(
                store::RunStore::open(path.toStdString(), options));
        } catch (const store::StoreError& e) {
            // A read-only store (a copy from a cluster, a read-only medium) is read as it is.
            if (e.problem() != store::StoreProblem::ReadOnly) throw;
            options.access = store::StoreAccess::ReadOnly;
            return std::make_unique<store::RunStore>(
                store::RunStore::open(path.toStdString(), options));
        }
    } catch (const Error& e) {
        *error = QString::fromStdString(e.what());
        return nullptr;
    }
}

} // namespace myelin::ui
