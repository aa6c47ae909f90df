#pragma once
// What every inspection view shares: its controls on top, then either its two plots (split
// 3:2, with an extra line below) or a message saying why there is nothing to plot; and a
// read-only connection to the run store.
#include <QString>
#include <Qt>

#include <memory>

class QLabel;
class QLayout;
class QStackedWidget;
class QWidget;

namespace myelin::store {
class RunStore;
}

namespace myelin::ui {

struct ViewFrame {
    QStackedWidget* stack = nullptr; // shows `message` or `plots`
    QLabel* message = nullptr;
    QWidget* plots = nullptr;
};

// Lays `view` out as `controls` over the stack; `below` (may be null) goes under the two
// plots. `messageName` is the message label's object name. Horizontal: `upper` left of `lower`.
ViewFrame makeViewFrame(QWidget* view, QLayout* controls, QWidget* upper, QWidget* lower,
                        QLayout* below, const QString& messageName,
                        Qt::Orientation orientation = Qt::Vertical);

// The store at `path` opened for reading (it marks no runs interrupted: that is the writers'
// business); null with `error` set when it cannot be opened, null with `error` empty when
// there is no file yet.
std::unique_ptr<store::RunStore> openStoreForReading(const QString& path, QString* error);

} // namespace myelin::ui
