#include "theme.h"

#include <QApplication>
#include <QFont>
#include <QPalette>
#include <QStyleFactory>

// Q_INIT_RESOURCE must be used outside any namespace. myelin_ui is a static library, so the
// resources compiled from resources/myelin.qrc are registered explicitly here.
static void initStudioResources() {
    Q_INIT_RESOURCE(myelin);
}

namespace myelin::ui {

namespace {

QPalette studioPalette() {
    using namespace colors;
    QPalette p;
    p.setColor(QPalette::Window, kWindow);
    p.setColor(QPalette::WindowText, kText);
    p.setColor(QPalette::Base, kSurface);
    p.setColor(QPalette::AlternateBase, QColor(0xF7, 0xF8, 0xFA));
    p.setColor(QPalette::Text, kText);
    p.setColor(QPalette::PlaceholderText, QColor(0x7B, 0x87, 0x94));
    p.setColor(QPalette::Button, kWindow);
    p.setColor(QPalette::ButtonText, kText);
    p.setColor(QPalette::BrightText, Qt::white);
    p.setColor(QPalette::Highlight, kAccent);
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::ToolTipBase, kSurface);
    p.setColor(QPalette::ToolTipText, kText);
    p.setColor(QPalette::Link, kAccent);
    p.setColor(QPalette::Light, Qt::white);
    p.setColor(QPalette::Midlight, QColor(0xEB, 0xEE, 0xF1));
    p.setColor(QPalette::Mid, QColor(0xC4, 0xCB, 0xD3));
    p.setColor(QPalette::Dark, QColor(0x9A, 0xA5, 0xB1));
    p.setColor(QPalette::Shadow, QColor(0x61, 0x6E, 0x7C));

    const QColor disabled(0x9A, 0xA5, 0xB1);
    p.setColor(QPalette::Disabled, QPalette::WindowText, disabled);
    p.setColor(QPalette::Disabled, QPalette::Text, disabled);
    p.setColor(QPalette::Disabled, QPalette::ButtonText, disabled);
    return p;
}

const char* kStyleSheet = R"(
QMenuBar {
    background: #FFFFFF;
    border-bottom: 1px solid #DDE1E6;
    padding: 2px 6px;
}
QMenuBar::item {
    padding: 5px 10px;
    border-radius: 4px;
    background: transparent;
}
QMenuBar::item:selected, QMenuBar::item:pressed {
    background: #E6EEF6;
}
QStatusBar {
    background: #FFFFFF;
    border-top: 1px solid #DDE1E6;
    color: #52606D;
}
QStatusBar::item {
    border: none;
}
QStatusBar QLabel {
    color: #52606D;
    padding: 2px 8px;
}
QToolTip {
    background: #FFFFFF;
    color: #1F2933;
    border: 1px solid #DDE1E6;
    padding: 4px;
}
)";

} // namespace

void applyStudioTheme(QApplication& app) {
    if (QStyle* fusion = QStyleFactory::create(QStringLiteral("Fusion"))) app.setStyle(fusion);
    app.setPalette(studioPalette());

    QFont font = QApplication::font();
    font.setPointSizeF(10.0);
    app.setFont(font);

    app.setStyleSheet(QString::fromLatin1(kStyleSheet));
    app.setWindowIcon(studioIcon());
}

QIcon studioIcon() {
    static const bool registered = [] {
        initStudioResources();
        return true;
    }();
    (void)registered;
    return QIcon(QStringLiteral(":/icons/myelin.png"));
}

} // namespace myelin::ui
