#include "widgets/wheel_guard.h"

#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QEvent>
#include <QScrollArea>

namespace myelin::ui {
namespace {

bool isInput(QObject* object) {
    return qobject_cast<QComboBox*>(object) || qobject_cast<QAbstractSpinBox*>(object);
}

// A combo box or spin box inside a scroll area: the inputs of a settings form. (Asked when the
// wheel turns: at polish time a form may not be in its scroll area yet.)
QWidget* guardedInput(QObject* object) {
    if (!isInput(object)) return nullptr;
    auto* widget = static_cast<QWidget*>(object);
    for (QWidget* up = widget->parentWidget(); up; up = up->parentWidget())
        if (qobject_cast<QScrollArea*>(up)) return widget;
    return nullptr;
}

class WheelGuard : public QObject {
  public:
    using QObject::QObject;

  protected:
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (event->type() == QEvent::Polish) {
            // Not Qt::WheelFocus: a wheel turn must not give an input focus (and with it the
            // wheel).
            if (isInput(watched)) static_cast<QWidget*>(watched)->setFocusPolicy(Qt::StrongFocus);
        } else if (event->type() == QEvent::Wheel) {
            QWidget* input = guardedInput(watched);
            if (input && !input->hasFocus()) {
                // Ignored, the wheel event travels on to the parents: the scroll area scrolls.
                event->ignore();
                return true;
            }
        }
        return QObject::eventFilter(watched, event);
    }
};

} // namespace

void installWheelGuard() {
    QCoreApplication* app = QCoreApplication::instance();
    const QString name = QStringLiteral("myelinWheelGuard");
    if (!app || app->findChild<QObject*>(name, Qt::FindDirectChildrenOnly)) return;
    auto* guard = new WheelGuard(app);
    guard->setObjectName(name);
    app->installEventFilter(guard);
}

} // namespace myelin::ui
