#pragma once
// The monkey of test_monkey (issue 41): seeded random input over the studio's windows, a
// watchdog that closes the dialogs and menus it opens, and the record of Qt warnings about
// invalid use. Used by test_monkey.cpp alone; a header to keep each file short.
#include "editor/graph_scene.h"
#include "editor/graph_view.h"
#include "editor/model_editor.h"
#include "editor/node_item.h"
#include "shell/main_window.h"

#include <QAbstractButton>
#include <QAction>
#include <QApplication>
#include <QDialog>
#include <QDockWidget>
#include <QDrag>
#include <QElapsedTimer>
#include <QFile>
#include <QFileDialog>
#include <QGraphicsItem>
#include <QLabel>
#include <QMenu>
#include <QMutex>
#include <QPointer>
#include <QTabWidget>
#include <QThread>
#include <QTimer>
#include <QWheelEvent>
#include <QWindow>
#include <QtTest>

#include <deque>
#include <memory>
#include <random>
#include <vector>

namespace myelin::test::monkey {

constexpr int kRecentEvents = 30; // printed when the run fails
// How long a drag may go on before it is cancelled (see pressMoveRelease).
constexpr int kDragReleaseMs = 1000;

// ---- Qt messages ---------------------------------------------------------------------------

// Substrings of warnings that mean the studio used Qt wrongly. Each names a class of mistake:
//   "QObject::"            connect() to a missing signal/slot, timers or parents across threads
//   "QWidget::", "QLayout" recursive repaint, a second layout, a widget in two layouts
//   "QPainter::"           painting outside paintEvent or on an inactive painter
//   "QGraphicsScene::", "QGraphicsItem::"  items added twice, removed from the wrong scene
//   "QAbstractItemModel", "QAbstractItemView", "QItemSelectionModel", "QSortFilterProxyModel",
//   "QHeaderView", "QTableWidget", "QTreeWidget", "QListWidget"  indexes of another model, rows
//                          out of range, selection models of another model
//   "QMetaObject::", "QMetaProperty"  invokeMethod of a missing method, bad queued arguments
//   "QThread", "QTimer", "QBasicTimer", "QSocketNotifier"  threads destroyed while running,
//                          timers started from the wrong thread
//   "QCustomPlot", "QCP"   the plot library's complaints (it reports misuse through qDebug too)
//   "invalid", "Cannot", "cannot", "out of range", "ASSERT", "Recursive"  the wording Qt uses
//                          for bad arguments in the classes not named above
// Left out on purpose: the platform plugins' own messages (category qt.qpa.*, "This plugin does
// not support ..." from offscreen, XCB errors under Xvfb), fonts, accessibility and D-Bus, which
// say nothing about the studio.
inline const QStringList kInvalidUse = {
    QStringLiteral("QObject::"),
    QStringLiteral("QWidget::"),
    QStringLiteral("QLayout"),
    QStringLiteral("QPainter::"),
    QStringLiteral("QGraphicsScene::"),
    QStringLiteral("QGraphicsItem::"),
    QStringLiteral("QAbstractItemModel"),
    QStringLiteral("QAbstractItemView"),
    QStringLiteral("QItemSelectionModel"),
    QStringLiteral("QSortFilterProxyModel"),
    QStringLiteral("QHeaderView"),
    QStringLiteral("QTableWidget"),
    QStringLiteral("QTreeWidget"),
    QStringLiteral("QListWidget"),
    QStringLiteral("QMetaObject::"),
    QStringLiteral("QMetaProperty"),
    QStringLiteral("QThread"),
    QStringLiteral("QTimer"),
    QStringLiteral("QBasicTimer"),
    QStringLiteral("QSocketNotifier"),
    QStringLiteral("QCustomPlot"),
    QStringLiteral("QCP"),
    QStringLiteral("invalid"),
    QStringLiteral("Invalid"),
    QStringLiteral("Cannot"),
    QStringLiteral("cannot"),
    QStringLiteral("out of range"),
    QStringLiteral("ASSERT"),
    QStringLiteral("Recursive"),
};

inline bool isPlatformMessage(const QMessageLogContext& context, const QString& text) {
    const QLatin1String category(context.category ? context.category : "");
    return category.startsWith(QLatin1String("qt.qpa")) ||
           category.startsWith(QLatin1String("qt.accessibility")) ||
           category.startsWith(QLatin1String("qt.text.font")) ||
           text.startsWith(QLatin1String("This plugin does not support")) ||
           text.contains(QLatin1String("XCB error")) || text.startsWith(QLatin1String("QXcb")) ||
           text.contains(QLatin1String("D-Bus")) || text.contains(QLatin1String("DBus"));
}

inline QtMessageHandler previousHandler = nullptr;
// Warnings come from any thread (the training worker too), hence the mutex.
inline QStringList invalidUseMessages;
inline QMutex messagesMutex;

inline void recordMessage(QtMsgType type, const QMessageLogContext& context, const QString& text) {
    const bool warning = type == QtWarningMsg || type == QtCriticalMsg || type == QtFatalMsg;
    const bool plotDebug = type == QtDebugMsg && text.contains(QLatin1String("QCP"));
    if ((warning || plotDebug) && !isPlatformMessage(context, text)) {
        for (const QString& pattern : kInvalidUse) {
            if (text.contains(pattern)) {
                QMutexLocker lock(&messagesMutex);
                invalidUseMessages << text;
                break;
            }
        }
    }
    // Hundreds of lines that say nothing: the offscreen plugin's "does not support", and
    // QTest's note on a point just outside a window (a widget reaching past its dialog's edge).
    if (previousHandler != nullptr && !text.startsWith(QLatin1String("This plugin does not")) &&
        !text.startsWith(QLatin1String("Mouse event at ")))
        previousHandler(type, context, text);
}

// ---- describing widgets --------------------------------------------------------------------

inline QString describe(const QObject* object) {
    if (object == nullptr) return QStringLiteral("(none)");
    QString text = QString::fromLatin1(object->metaObject()->className());
    if (!object->objectName().isEmpty()) text += QLatin1Char('#') + object->objectName();
    QString label;
    if (const auto* button = qobject_cast<const QAbstractButton*>(object))
        label = button->text();
    else if (const auto* qlabel = qobject_cast<const QLabel*>(object))
        label = qlabel->text();
    else if (const auto* widget = qobject_cast<const QWidget*>(object);
             widget && widget->isWindow())
        label = widget->windowTitle();
    label = label.simplified().left(30);
    if (!label.isEmpty()) text += QStringLiteral(" \"%1\"").arg(label);
    // The nearest named ancestor places it.
    for (const QObject* up = object->parent(); up != nullptr; up = up->parent()) {
        if (!up->objectName().isEmpty() && !up->objectName().startsWith(QLatin1String("qt_"))) {
            text += QStringLiteral(" in %1").arg(up->objectName());
            break;
        }
    }
    return text;
}

// ---- the monkey ----------------------------------------------------------------------------

// Sends the events. Every step runs from its own single-shot timer, and the next step is
// scheduled before the event is sent, so the steps go on inside a modal dialog's or a context
// menu's nested event loop; a repeating watchdog closes what they leave open.
class Monkey : public QObject {
  public:
    Monkey(ui::MainWindow& window, quint32 seed, qint64 durationMs, const QString& logPath)
        : window_(window), rng_(seed), timing_(seed ^ 0x9e3779b9u), durationMs_(durationMs),
          log_(logPath) {
        scheduledStopStep_ = uniform(100, 300);
        watchdog_.setInterval(40);
        connect(&watchdog_, &QTimer::timeout, this, &Monkey::watch);
    }

    bool open() { return log_.open(QIODevice::WriteOnly | QIODevice::Text); }

    void start() {
        clock_.start();
        watchdog_.start();
        scheduleNextStep();
    }
    bool timeIsUp() const { return clock_.elapsed() >= durationMs_; }
    qint64 steps() const { return step_; }
    int dialogsClosed() const { return dialogsClosed_; }
    int menusClosed() const { return popupsClosed_; }
    const QStringList& failures() const { return failures_; }
    const QStringList& eventsAtFirstFailure() const { return eventsAtFailure_; }
    QStringList recentEvents() const { return {recent_.begin(), recent_.end()}; }

    void fail(const QString& what) {
        if (failures_.contains(what)) return; // once is enough to tell
        if (failures_.isEmpty()) eventsAtFailure_ = recentEvents();
        failures_ << what;
        record(QStringLiteral("FAILURE: ") + what);
    }

    void record(const QString& line) {
        const QString stamped = QStringLiteral("#%1 %2s %3")
                                    .arg(step_)
                                    .arg(double(clock_.elapsed()) / 1000.0, 0, 'f', 3)
                                    .arg(line);
        log_.write(stamped.toUtf8() + '\n');
        log_.flush(); // a crash keeps every line written so far
        recent_.push_back(stamped);
        if (recent_.size() > size_t(kRecentEvents)) recent_.pop_front();
    }

    // Closes what is still open once the time is up: popups, then modal dialogs.
    void stop() { stopped_ = true; }

    // Invalid-use warnings since the last look, as failures after the event that caused them.
    void checkMessages() {
        QStringList fresh;
        {
            QMutexLocker lock(&messagesMutex);
            fresh = invalidUseMessages.mid(messagesSeen_);
            messagesSeen_ = int(invalidUseMessages.size());
        }
        for (const QString& message : fresh)
            fail(QStringLiteral("Qt warning about invalid use: ") + message);
    }

  private:
    int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
    bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

    void scheduleNextStep() {
        if (stopped_ || timeIsUp()) return;
        QTimer::singleShot(std::uniform_int_distribution<int>(0, 8)(timing_), this, &Monkey::step);
    }

    void step() {
        checkMessages();
        scheduleNextStep();
        // QTest runs the event loop after each event it sends, so a step can come while the
        // last one is between its press and its release. A person cannot click elsewhere then:
        // wait, unless that event opened a dialog or a menu (whose loop runs over it) or has
        // been going on for long (a drag and drop's own loop).
        if (!going_.empty() && QApplication::activeModalWidget() == going_.back().modal &&
            QApplication::activePopupWidget() == going_.back().popup && ++waited_ < 25)
            return;
        waited_ = 0;
        going_.push_back({QApplication::activeModalWidget(), QApplication::activePopupWidget()});
        struct Done {
            std::vector<Going>& going;
            ~Done() { going.pop_back(); }
        } done{going_};
        ++step_;
        if (!window_.isVisible()) {
            record(QStringLiteral("the main window was closed (Quit): shown again"));
            window_.show();
        }
        // A run from the first event (before the model can be broken by the others), stopped
        // among them; more are started and stopped at random below.
        if (step_ == 1) {
            record(QStringLiteral("train (scheduled)"));
            triggerIfEnabled("actionTrain");
            return;
        }
        if (step_ == scheduledStopStep_) {
            record(QStringLiteral("stop (scheduled)"));
            triggerIfEnabled("actionStop");
            return;
        }
        if (QWidget* popup = QApplication::activePopupWidget()) {
            actInPopup(popup);
            return;
        }
        QWidget* root = QApplication::activeModalWidget();
        if (root != nullptr) {
            if (root == trackedModal_) ++eventsInModal_;
        } else {
            root = pickWindow();
        }
        actIn(root);
    }

    // The main window mostly; a floating dock or another top-level window sometimes.
    QWidget* pickWindow() {
        std::vector<QWidget*> windows;
        for (QWidget* top : QApplication::topLevelWidgets())
            if (top != &window_ && top->isVisible() && top->windowHandle() != nullptr &&
                !(top->windowFlags() & Qt::ToolTip) && !top->inherits("QMenu") &&
                !top->inherits("QComboBoxPrivateContainer") && !top->inherits("QTipLabel"))
                windows.push_back(top);
        if (windows.empty() || chance(0.8)) return &window_;
        return windows[size_t(uniform(0, int(windows.size()) - 1))];
    }

    // A visible, enabled widget of `root`'s window (root itself when it has none).
    QWidget* pickWidget(QWidget* root) {
        std::vector<QWidget*> widgets;
        for (QWidget* widget : root->findChildren<QWidget*>())
            if (widget->isVisible() && widget->isEnabled() && widget->window() == root &&
                widget->width() > 1 && widget->height() > 1 && !widget->visibleRegion().isEmpty())
                widgets.push_back(widget);
        if (widgets.empty()) return root;
        return widgets[size_t(uniform(0, int(widgets.size()) - 1))];
    }

    // A point of the widget that is on screen (a widget in a scroll area can reach past it).
    QPoint pointIn(const QWidget* widget) {
        QRect visible = widget->visibleRegion().boundingRect();
        if (visible.isEmpty()) visible = widget->rect();
        return {uniform(visible.left(), std::max(visible.left(), visible.right())),
                uniform(visible.top(), std::max(visible.top(), visible.bottom()))};
    }

    void actIn(QWidget* root) {
        const int kind = uniform(0, 99);
        if (kind < 28) return click(pickWidget(root), Qt::LeftButton, false);
        if (kind < 35) return click(pickWidget(root), Qt::LeftButton, true);
        if (kind < 43) // a context menu; a file dialog's offers Delete and Rename: left there
            return click(pickWidget(root), inFileDialog(root) ? Qt::LeftButton : Qt::RightButton,
                         false);
        if (kind < 53) return drag(root);
        if (kind < 59) return portDrag();
        if (kind < 66) return wheel(pickWidget(root));
        if (kind < 88) return key(root);
        if (kind < 92) return switchTab();
        if (kind < 95) return toggleDock();
        if (kind < 97) {
            record(QStringLiteral("train"));
            return triggerIfEnabled("actionTrain");
        }
        record(QStringLiteral("stop"));
        triggerIfEnabled("actionStop");
    }

    void triggerIfEnabled(const char* name) {
        if (auto* action = window_.findChild<QAction*>(QString::fromLatin1(name));
            action != nullptr && action->isEnabled())
            action->trigger();
    }

    static bool inFileDialog(const QWidget* widget) {
        for (; widget != nullptr; widget = widget->parentWidget())
            if (qobject_cast<const QFileDialog*>(widget) != nullptr) return true;
        return false;
    }

    // Mouse events go through the window, as the platform delivers them: grabs, popups and the
    // context-menu request behave as for a person.
    static QWindow* windowOf(QWidget* widget) { return widget->window()->windowHandle(); }
    static QPoint inWindow(QWidget* widget, QPoint p) { return widget->mapTo(widget->window(), p); }

    void click(QWidget* widget, Qt::MouseButton button, bool twice) {
        QWindow* window = windowOf(widget);
        if (window == nullptr) return;
        const QPoint p = pointIn(widget);
        const Qt::KeyboardModifiers modifiers =
            chance(0.1) ? Qt::KeyboardModifiers(Qt::ControlModifier) : Qt::NoModifier;
        record(QStringLiteral("%1%2 at %3 (%4,%5)")
                   .arg(twice ? QStringLiteral("double-click") : QStringLiteral("click"),
                        button == Qt::RightButton ? QStringLiteral(" right") : QString(),
                        describe(widget))
                   .arg(p.x())
                   .arg(p.y()));
        const QPoint at = inWindow(widget, p);
        if (twice)
            QTest::mouseDClick(window, button, modifiers, at);
        else
            QTest::mouseClick(window, button, modifiers, at);
    }

    void drag(QWidget* root) {
        QWidget* from = pickWidget(root);
        QWidget* to = chance(0.5) ? from : pickWidget(root);
        const QPoint a = inWindow(from, pointIn(from));
        const QPoint b = inWindow(to, pointIn(to));
        record(QStringLiteral("drag from %1 to %2").arg(describe(from), describe(to)));
        pressMoveRelease(windowOf(from), a, b, chance(0.15) ? Qt::MiddleButton : Qt::LeftButton);
    }

    // From an output port to an input port of two cards on the canvas.
    void portDrag() {
        ui::GraphView* view = window_.editor()->view();
        if (!view->isVisible() || view->window() != &window_) return;
        std::vector<ui::NodeItem*> nodes;
        for (QGraphicsItem* item : view->scene()->items())
            if (item->type() == ui::NodeItem::Type)
                nodes.push_back(static_cast<ui::NodeItem*>(item));
        if (nodes.empty()) return;
        ui::NodeItem* source = nodes[size_t(uniform(0, int(nodes.size()) - 1))];
        ui::NodeItem* target = nodes[size_t(uniform(0, int(nodes.size()) - 1))];
        const ui::PortRef out{true, uniform(0, std::max(0, source->outputCount() - 1))};
        const ui::PortRef in{false, uniform(0, std::max(0, target->inputCount() - 1))};
        QWidget* viewport = view->viewport();
        const QPoint from = view->mapFromScene(source->portScenePos(out));
        const QPoint to = view->mapFromScene(target->portScenePos(in));
        if (!viewport->rect().contains(from) || !viewport->rect().contains(to))
            return; // scrolled away
        const QPoint a = inWindow(viewport, from);
        const QPoint b = inWindow(viewport, to);
        record(QStringLiteral("drag port %1 of node %2 to port %3 of node %4")
                   .arg(out.index)
                   .arg(source->id())
                   .arg(in.index)
                   .arg(target->id()));
        pressMoveRelease(windowOf(viewport), a, b, Qt::LeftButton);
    }

    // A press, moves and release under way; the rest can be sent from inside a drag's loop.
    struct Gesture {
        QPointer<QWindow> window;
        QPoint from, to;
        Qt::MouseButton button = Qt::LeftButton;
        int moves = 0, next = 1;
        int loopLevel = 0; // the event loops running when it began
        bool released = false;
    };

    static void moveOn(Gesture& g) {
        const int i = g.next++;
        QTest::mouseMove(g.window, g.from + (g.to - g.from) * i / g.moves);
    }

    static void release(Gesture& g) {
        if (g.released || !g.window) return;
        g.released = true;
        QTest::mouseRelease(g.window, g.button, Qt::NoModifier, g.to);
    }

    // Inside the loop of a QDrag's exec(): an event loop more than when the gesture began, and a
    // QDrag alive (a child of its source until deleteLater).
    static bool inDragLoop(const Gesture& g) {
        if (QThread::currentThread()->loopLevel() <= g.loopLevel) return false;
        for (QWidget* top : QApplication::topLevelWidgets())
            if (top->findChild<QDrag*>() != nullptr) return true;
        return false;
    }

    // Each event runs the event loop (QTest processes events after it), which can close the
    // window under the drag: look before every event. A move can start a QDrag (a palette entry,
    // selected text, a file dialog's list): offscreen its exec() returns at once, under xcb it
    // runs its own loop until a release that this sequence, stuck in that move, never sent (runs
    // hung). A zero timer armed before each move runs first in that loop and sends the rest from
    // there, so the drag drops as a person's would; run anywhere else it does nothing, and the
    // events offscreen stay the seed's. A drag still going after kDragReleaseMs (its window gone,
    // or blocked by a modal dialog) is cancelled. The timers are the monkey's: the window can go.
    void pressMoveRelease(QWindow* window, QPoint a, QPoint b, Qt::MouseButton button) {
        auto g = std::make_shared<Gesture>();
        g->window = window;
        g->from = a;
        g->to = b;
        g->button = button;
        g->loopLevel = QThread::currentThread()->loopLevel();
        if (!g->window) return;
        QTest::mouseMove(window, a);
        // The watchdog may have closed a dialog meanwhile: no press into a hidden window (no
        // user can, and Qt's QSizeGrip dereferences its missing window handle then).
        if (!g->window || !g->window->isVisible()) return;
        QTest::mousePress(window, button, Qt::NoModifier, a);
        QTimer::singleShot(kDragReleaseMs, this, [this, g] {
            if (g->released) return;
            if (inDragLoop(*g)) {
                record(QStringLiteral("the drag's QDrag is still going: cancelled"));
                QDrag::cancel();
            }
            release(*g);
        });
        g->moves = uniform(2, 6);
        while (g->next <= g->moves && g->window && !g->released) {
            QTimer::singleShot(0, this, [this, g] {
                if (g->released || !inDragLoop(*g)) return;
                record(QStringLiteral("the drag started a QDrag: the rest sent from its loop"));
                while (g->next <= g->moves && g->window && !g->released)
                    moveOn(*g);
                release(*g);
            });
            moveOn(*g);
        }
        release(*g);
    }

    void wheel(QWidget* widget) {
        const QPoint p = pointIn(widget);
        QWidget* target = widget->childAt(p) != nullptr ? widget->childAt(p) : widget;
        const QPoint at = target->mapFrom(widget, p);
        const QPoint delta(0, (chance(0.5) ? 1 : -1) * 120 * uniform(1, 3));
        const Qt::KeyboardModifiers modifiers =
            chance(0.2) ? Qt::KeyboardModifiers(Qt::ControlModifier) : Qt::NoModifier;
        record(QStringLiteral("wheel %1%2 at %3")
                   .arg(delta.y())
                   .arg(modifiers ? QStringLiteral(" with Ctrl") : QString(), describe(target)));
        QWheelEvent event(QPointF(at), QPointF(target->mapToGlobal(at)), QPoint(), delta,
                          Qt::NoButton, modifiers, Qt::NoScrollPhase, false);
        QApplication::sendEvent(target, &event);
    }

    struct Key {
        Qt::Key key;
        Qt::KeyboardModifiers modifiers;
        const char* name;
    };

    void key(QWidget* root) {
        static const Key keys[] = {
            {Qt::Key_Delete, Qt::NoModifier, "Delete"},
            {Qt::Key_Backspace, Qt::NoModifier, "Backspace"},
            {Qt::Key_Z, Qt::ControlModifier, "Ctrl+Z"},
            {Qt::Key_Y, Qt::ControlModifier, "Ctrl+Y"},
            {Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier, "Ctrl+Shift+Z"},
            {Qt::Key_S, Qt::ControlModifier, "Ctrl+S"},
            {Qt::Key_A, Qt::ControlModifier, "Ctrl+A"},
            {Qt::Key_C, Qt::ControlModifier, "Ctrl+C"},
            {Qt::Key_X, Qt::ControlModifier, "Ctrl+X"},
            {Qt::Key_V, Qt::ControlModifier, "Ctrl+V"},
            {Qt::Key_D, Qt::ControlModifier, "Ctrl+D"},
            {Qt::Key_W, Qt::ControlModifier, "Ctrl+W"},
            {Qt::Key_N, Qt::ControlModifier, "Ctrl+N"},
            {Qt::Key_O, Qt::ControlModifier, "Ctrl+O"},
            {Qt::Key_Q, Qt::ControlModifier, "Ctrl+Q"},
            {Qt::Key_Tab, Qt::NoModifier, "Tab"},
            {Qt::Key_Backtab, Qt::ShiftModifier, "Shift+Tab"},
            {Qt::Key_Escape, Qt::NoModifier, "Escape"},
            {Qt::Key_Return, Qt::NoModifier, "Enter"},
            {Qt::Key_Space, Qt::NoModifier, "Space"},
            {Qt::Key_Left, Qt::NoModifier, "Left"},
            {Qt::Key_Right, Qt::NoModifier, "Right"},
            {Qt::Key_Up, Qt::NoModifier, "Up"},
            {Qt::Key_Down, Qt::NoModifier, "Down"},
            {Qt::Key_PageDown, Qt::NoModifier, "PageDown"},
            {Qt::Key_Home, Qt::NoModifier, "Home"},
            {Qt::Key_F2, Qt::NoModifier, "F2"},
            {Qt::Key_F5, Qt::NoModifier, "F5"},
            {Qt::Key_F5, Qt::ShiftModifier, "Shift+F5"},
            {Qt::Key_F6, Qt::NoModifier, "F6"},
            {Qt::Key_F7, Qt::NoModifier, "F7"},
            {Qt::Key_Plus, Qt::ControlModifier, "Ctrl++"},
            {Qt::Key_Minus, Qt::ControlModifier, "Ctrl+-"},
        };
        const QString target = describe(QApplication::focusWidget());
        if (chance(0.35)) { // typing: a letter or digit
            const char c = chance(0.8) ? char('a' + uniform(0, 25)) : char('0' + uniform(0, 9));
            record(QStringLiteral("key '%1' to %2").arg(QLatin1Char(c)).arg(target));
            pressAndRelease(root->windowHandle(),
                            Qt::Key(c >= 'a' ? Qt::Key_A + (c - 'a') : Qt::Key_0 + (c - '0')), {},
                            QString(QLatin1Char(c)));
            return;
        }
        const Key& k = keys[uniform(0, int(std::size(keys)) - 1)];
        // Delete and F2 in a file dialog delete or rename files: never, wherever it has gone.
        if (inFileDialog(root) && (k.key == Qt::Key_Delete || k.key == Qt::Key_F2)) {
            record(QStringLiteral("key %1 left out in a file dialog").arg(QLatin1String(k.name)));
            return;
        }
        record(QStringLiteral("key %1 to %2").arg(QLatin1String(k.name), target));
        QString text;
        if (k.key == Qt::Key_Space) text = QStringLiteral(" ");
        if (k.key == Qt::Key_Return) text = QStringLiteral("\r");
        if (k.key == Qt::Key_Tab) text = QStringLiteral("\t");
        pressAndRelease(root->windowHandle(), k.key, k.modifiers, text);
    }

    // One press and one release (modifiers in the events, no separate Shift or Ctrl presses):
    // the press can close the window (a combo box's list closes on a key), so look before the
    // release. QTest::keyClick sends its events to a window it does not look at again.
    static void pressAndRelease(QWindow* window, Qt::Key key, Qt::KeyboardModifiers modifiers,
                                const QString& text) {
        QPointer<QWindow> alive(window);
        if (!alive) return;
        QTest::simulateEvent(window, true, key, modifiers, text, false);
        if (alive) QTest::simulateEvent(window, false, key, modifiers, text, false);
    }

    void switchTab() {
        QTabWidget* tabs = window_.workspaceTabs();
        if (tabs == nullptr || tabs->count() == 0) return;
        const int index = uniform(0, tabs->count() - 1);
        record(QStringLiteral("tab %1").arg(tabs->tabText(index)));
        tabs->setCurrentIndex(index);
    }

    void toggleDock() {
        const QList<QDockWidget*> docks = window_.findChildren<QDockWidget*>();
        if (docks.isEmpty()) return;
        QDockWidget* dock = docks[uniform(0, int(docks.size()) - 1)];
        if (chance(0.25)) {
            record(QStringLiteral("float %1: %2").arg(dock->objectName()).arg(!dock->isFloating()));
            dock->setFloating(!dock->isFloating());
        } else {
            record(QStringLiteral("show/hide %1").arg(dock->objectName()));
            dock->toggleViewAction()->trigger();
            if (dock->isVisible()) dock->raise();
        }
    }

    // In an open menu (or a combo box's list): a random enabled action mostly, else any event.
    void actInPopup(QWidget* popup) {
        if (popup != trackedPopup_) {
            trackedPopup_ = popup;
            eventsInPopup_ = 0;
            popupAttempts_ = 0;
        }
        ++eventsInPopup_;
        QWindow* window = popup->windowHandle();
        if (auto* menu = qobject_cast<QMenu*>(popup); menu != nullptr && window != nullptr) {
            std::vector<QAction*> enabled;
            for (QAction* action : menu->actions())
                if (action->isVisible() && action->isEnabled() && !action->isSeparator() &&
                    !menu->actionGeometry(action).isEmpty())
                    enabled.push_back(action);
            if (enabled.empty() || chance(0.1)) {
                record(QStringLiteral("key Escape in menu %1").arg(describe(menu)));
                pressAndRelease(window, Qt::Key_Escape, {}, QString());
                return;
            }
            QAction* action = enabled[size_t(uniform(0, int(enabled.size()) - 1))];
            record(QStringLiteral("menu pick \"%1\" in %2")
                       .arg(action->text().remove(QLatin1Char('&')), describe(menu)));
            QTest::mouseClick(window, Qt::LeftButton, Qt::NoModifier,
                              menu->actionGeometry(action).center());
            return;
        }
        if (chance(0.7))
            click(pickWidget(popup), Qt::LeftButton, false);
        else
            key(popup);
    }

    // Closes a modal dialog after a few events in it, and any popup left open; a dialog that
    // stays up after many tries is a failure (it would block a person too).
    void watch() {
        checkMessages();
        // Once the time is up no step comes: everything still open is closed from here. The
        // test's own wind-down cannot do it while a menu's or dialog's loop runs over it.
        const bool ending = stopped_ || timeIsUp();
        QWidget* popup = QApplication::activePopupWidget();
        if (popup == nullptr) popupAttempts_ = 0;
        if (popup != nullptr && popup != trackedPopup_ && ending) { // opened by the last step
            trackedPopup_ = popup;
            popupAttempts_ = 0;
            eventsInPopup_ = 99;
        }
        if (popup != nullptr && popup == trackedPopup_ && (eventsInPopup_ > 6 || ending)) {
            ++popupAttempts_;
            if (popupAttempts_ == 1) ++popupsClosed_;
            if (popupAttempts_ > 50) {
                fail(QStringLiteral("a popup cannot be closed: ") + describe(popup));
                popup->hide();
            } else {
                QPointer<QWidget> target(popup);
                QTimer::singleShot(0, this, [target] {
                    if (target) target->close();
                });
            }
            return;
        }
        // Never a dialog under an open menu: a person cannot close one there, and Qt's own
        // dialogs run some context menus on the stack as children (QFileDialog's list): deleting
        // the dialog under it frees that menu (seed 8, before this wait).
        if (popup != nullptr) return;

        QWidget* modal = QApplication::activeModalWidget();
        if (modal == nullptr) {
            trackedModal_ = nullptr;
            return;
        }
        if (modal != trackedModal_) {
            trackedModal_ = modal;
            eventsInModal_ = 0;
            closeAttempts_ = 0;
            eventsBeforeClose_ = std::uniform_int_distribution<int>(1, 6)(timing_);
            record(QStringLiteral("modal dialog up: ") + describe(modal));
            return;
        }
        if (eventsInModal_ < eventsBeforeClose_ && !ending) return;
        if (closeAttempts_++ == 0) ++dialogsClosed_;
        if (closeAttempts_ > 75) { // 3 s of rejects
            fail(QStringLiteral("a modal dialog cannot be closed: ") + describe(modal));
            modal->hide();
            return;
        }
        if (closeAttempts_ % 5 != 1) return; // give the reject time to work
        record(QStringLiteral("closing modal dialog: ") + describe(modal));
        // From its own timer: a reject that opens another dialog must not block this watchdog.
        QPointer<QWidget> target(modal);
        QTimer::singleShot(0, this, [target] {
            // Only the dialog on top, with no menu over it, as a person would: the event before
            // this may have opened another over it, e.g. QFileDialog's overwrite question, a
            // child on the stack that deleting the dialog frees (seed 10).
            if (!target || QApplication::activeModalWidget() != target ||
                QApplication::activePopupWidget() != nullptr)
                return;
            if (auto* dialog = qobject_cast<QDialog*>(target.data()))
                dialog->reject();
            else
                target->close();
        });
    }

    ui::MainWindow& window_;
    std::mt19937 rng_;    // every event
    std::mt19937 timing_; // the pauses between events and after how many events a dialog is
                          // closed: how often these come varies with the machine, and must not
                          // shift the events' sequence
    qint64 durationMs_;
    QFile log_;
    QElapsedTimer clock_;
    QTimer watchdog_;
    qint64 step_ = 0;
    bool stopped_ = false;
    qint64 scheduledStopStep_ = 0;
    std::deque<QString> recent_;
    QStringList failures_, eventsAtFailure_;
    QPointer<QWidget> trackedModal_, trackedPopup_;
    int eventsInModal_ = 0, eventsBeforeClose_ = 0, closeAttempts_ = 0, dialogsClosed_ = 0;
    int eventsInPopup_ = 0, popupAttempts_ = 0, popupsClosed_ = 0;
    int messagesSeen_ = 0;
    // The steps under way, innermost last, with the dialog and menu that were open as each began.
    struct Going {
        QPointer<QWidget> modal, popup;
    };
    std::vector<Going> going_;
    int waited_ = 0;
};

} // namespace myelin::test::monkey
