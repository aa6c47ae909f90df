#include "widgets/theme.h"

#include <qcustomplot.h>

#include <myelin/graph/registry.h>

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

QColor categoryColor(graph::Category category) {
    using graph::Category;
    switch (category) {
    case Category::InputOutput:
        return {0x4A, 0x5A, 0x6E};
    case Category::LinearConv:
        return {0x2F, 0x62, 0x96};
    case Category::Pooling:
        return {0x1F, 0x8A, 0x8A};
    case Category::Normalization:
        return {0x6E, 0x56, 0xA8};
    case Category::Activation:
        return {0xC9, 0x6F, 0x1C};
    case Category::Regularization:
        return {0x8A, 0x6D, 0x3B};
    case Category::Merge:
        return {0x2E, 0x8B, 0x57};
    case Category::Reshape:
        return {0x5F, 0x73, 0x8C};
    case Category::Embedding:
        return {0xA8, 0x45, 0x7A};
    }
    return colors::kMutedText;
}

void stylePlot(QCustomPlot* plot, std::initializer_list<QCPAxis*> axes, const QColor& axisColor) {
    plot->setBackground(QBrush(colors::kSurface));
    for (QCPAxis* axis : axes) {
        axis->setBasePen(QPen(axisColor));
        axis->setTickPen(QPen(axisColor));
        axis->setSubTickPen(QPen(axisColor));
        axis->setLabelColor(colors::kMutedText);
        axis->setTickLabelColor(colors::kMutedText);
        axis->grid()->setPen(QPen(colors::kGridLine));
    }
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
