#include "widgets/theme.h"

#include <qcustomplot.h>

#include <cmath>

#include <myelin/graph/registry.h>

#include <QApplication>
#include <QFont>
#include <QLabel>
#include <QPalette>
#include <QRegularExpression>
#include <QResizeEvent>
#include <QStyle>
#include <QStyleFactory>
#include <QWidget>

#include <iterator>
#include <map>

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
    p.setColor(QPalette::PlaceholderText, kFaintText);
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

// The studio's style sheet. "@name" stands for the colour table's entry kName (@mutedText:
// colors::kMutedText); studioStyleSheet() substitutes them. Rules for one widget select it by
// object name (#layerPalette QTreeWidget) or by its "class" property.
const char* const kStyleSheetTemplate = R"(
QMenuBar {
    background: @surface;
    border-bottom: 1px solid @border;
    padding: 2px 6px;
}
QMenuBar::item {
    padding: 5px 10px;
    border-radius: 4px;
    background: transparent;
}
QMenuBar::item:selected, QMenuBar::item:pressed {
    background: @accentSoft;
}
QStatusBar {
    background: @surface;
    border-top: 1px solid @border;
    color: @mutedText;
}
QStatusBar::item {
    border: none;
}
QStatusBar QLabel {
    color: @mutedText;
    padding: 2px 8px;
}
QToolTip {
    background: @surface;
    color: @text;
    border: 1px solid @border;
    padding: 4px;
}

/* Main window (shell/main_window.cpp) */
QDockWidget { font-weight: bold; color: @mutedText; }
QDockWidget::title {
    background: @window;
    padding: 6px 10px;
    border-bottom: 1px solid @border;
}
#lockBanner {
    background: @warningSoft; color: @warningText; border-bottom: 1px solid @warningBorder;
    padding: 6px 12px;
}
#workspaceTabs::pane { border: none; }

/* Welcome page (shell/welcome_page.cpp) */
#welcomePage { background: @window; }
#welcomeTitle { font-size: 26pt; font-weight: bold; color: @text; }
#welcomeSubtitle { font-size: 13pt; color: @mutedText; }
QLabel[class="welcomeHeading"] { font-size: 9pt; font-weight: bold; color: @faintText; }
#backendCard, #roadmapCard {
    background: @surface;
    border: 1px solid @border;
    border-radius: 8px;
}
QLabel[class="backendName"] { font-size: 12pt; font-weight: bold; color: @text; }
QLabel[class="backendDetails"] { color: @mutedText; }
QLabel[class="backendDot"] { background: @ok; border-radius: 5px; }
#welcomeRoadmap { color: @text; font-size: 10.5pt; }
#welcomeStatus { color: @mutedText; }
#projectNotice {
    background: @accentSoft;
    border: 1px solid @accentBorder;
    border-radius: 8px;
    color: @text;
    padding: 12px 16px;
    margin-top: 16px; /* below the start buttons; no gap when hidden */
}
#welcomeFooter { color: @faintText; font-size: 9pt; }
QPushButton[class="startButton"] {
    background: @surface;
    border: 1px solid @buttonBorder;
    border-radius: 6px;
    padding: 8px 18px;
    color: @text;
    font-size: 10.5pt;
}
QPushButton[class="startButton"]:hover { background: @accentSoft; border-color: @accent; }
QPushButton#welcomeNew, QPushButton#evaluateButton:enabled { background: @accent; border-color: @accent; color: @textOnColor; }
QPushButton#welcomeNew:hover, QPushButton#evaluateButton:enabled:hover { background: @accentHover; }
QLabel[class="recentFile"] a { color: @accent; }
QLabel[class="recentPath"] { color: @faintText; font-size: 9pt; }

/* New project dialog (shell/new_project_dialog.cpp) */
#newProjectHeading { font-size: 11pt; color: @text; }
#exampleList { border: 1px solid @border; border-radius: 6px; background: @surface; }
#exampleList::item { border-bottom: 1px solid @divider; }
#exampleList::item:selected { background: @accentSoft; }
QLabel[class="exampleName"] { font-weight: bold; font-size: 10.5pt; color: @text; }
QLabel[class="exampleDetails"] { color: @mutedText; }
QLabel[class="exampleFacts"] { color: @faintText; font-size: 8.5pt; }
#examplesMissing { color: @faintText; }

/* Forms of AttrRows (widgets/attr_editor.h): node inspector, Data and Training pages */
QLabel[class="sectionHeading"] {
    font-size: 8pt; font-weight: bold; color: @faintText; padding-top: 6px;
}
QLabel[class="fieldError"] { color: @error; font-size: 8.5pt; }
QLineEdit[invalid="true"], QSpinBox[invalid="true"], QDoubleSpinBox[invalid="true"] {
    border: 1px solid @error; border-radius: 3px; background: @errorSoft;
}

/* Node inspector (editor/node_inspector.cpp) */
#nodeInspector, #inspectorContent { background: @surface; }
#inspectorTitle { font-size: 12pt; font-weight: bold; color: @text; }
#inspectorKindDoc { color: @mutedText; }
#inspectorOutput { color: @text; }
#inspectorProblems { color: @error; }
#inspectorEmpty { color: @faintText; padding: 24px 12px; }

/* Layer palette (editor/layer_palette.cpp) */
#layerPalette QLineEdit {
    border: 1px solid @border;
    border-radius: 5px;
    padding: 4px 6px;
    background: @surface;
}
#layerPalette QLineEdit:focus { border-color: @accent; }
#layerPalette QTreeWidget {
    border: none;
    background: @surface;
}
#layerPalette QTreeWidget::item { padding: 3px 2px; }

/* Problems and Model Summary docks (editor/problems_panel.cpp, model_summary_panel.cpp) */
#problemsAllClear { color: @ok; background: @surface; }
#summaryTable::item { padding: 0 8px; }
#summaryTable QHeaderView::section { padding: 3px 8px; }

/* Live Training dock (training/training_dock.cpp); the state label by its "state" property */
#trainingDock { background: @surface; }
#trainingState {
    border-radius: 9px; padding: 2px 10px; font-weight: bold; color: @textOnColor;
    background: @faintText;
}
#trainingState[state="running"] { background: @ok; }
#trainingState[state="paused"] { background: @warning; }
#trainingState[state="stopping"] { background: @accent; }
#trainingRun { font-weight: bold; color: @text; }
#trainingStats { color: @mutedText; }
#trainingLog { border: 1px solid @border; background: @logBackground; font-size: 8.5pt; }

/* Data page (pages/data_page*.cpp) */
#dataPage, #dataSettings, #dataPreviewPanel { background: @surface; }
#dataSettingsScroll { border: none; border-right: 1px solid @border; background: @surface; }
#dataPageTitle { font-size: 12pt; font-weight: bold; color: @text; }
#dataSourceDoc, #dataTransformDoc, #dataLoaderFacts, #dataStatus, #dataExamplesNote,
#dataTargetStats { color: @mutedText; }
#dataSummary { color: @text; }
#dataError, #forkProblem {
    color: @error; background: @errorSoft; border: 1px solid @errorBorder; border-radius: 4px;
    padding: 8px 10px;
}
#dataTransforms { border: 1px solid @border; border-radius: 3px; }

/* Training page (pages/training_page*.cpp) */
#trainingPage, #trainingSettingsContent, #trainingPreview { background: @surface; }
#trainingSettingsScroll { background: @surface; border: none; border-right: 1px solid @border; }
#trainingBanner {
    background: @warningSoft; color: @warningText; border-bottom: 1px solid @warningBorder;
    padding: 8px 16px;
}
#previewTitle { font-size: 12pt; font-weight: bold; color: @text; }
#lrPreviewSummary { color: @text; }
#lrPreviewNote, #lrPreviewSteps, #assumeStepsLabel, #assumeStepsSuffix { color: @mutedText; }
#lrPreviewError { color: @error; }
#lrPreviewPlateauNote {
    color: @noteText; background: @canvas; border: 1px dashed @noteBorder; border-radius: 6px;
    padding: 24px 32px;
}
#trainOverview {
    color: @text; background: @canvas; border: 1px solid @panelBorder; border-radius: 6px;
    padding: 8px 12px;
}
QLabel[class="componentDoc"] { color: @mutedText; }
QLabel[class="fieldWarning"] { color: @warning; font-size: 8.5pt; }

/* Gradient Flow, Distributions and Feature Maps views (inspect/) */
#featureMapsState, #featureMapsRange { color: @mutedText; }
QLabel[class="viewMessage"] { color: @mutedText; font-size: 11pt; }
#distributionsNonFinite { color: @mutedText; }
#distributionsNonFinite[problem="true"] { color: @error; }

/* Runs browser (runs/) */
#runsMessage[problem="true"] { color: @error; }
#runsCount, #runsScopeHint { color: @mutedText; }
#runsScopeHint a { color: @accent; }
#runsStatusLine { color: @error; }
)";

// The colour table by the names the style sheet uses.
const std::map<QString, QColor>& sheetColors() {
    using namespace colors;
    static const std::map<QString, QColor> table = {
        {QStringLiteral("window"), kWindow},
        {QStringLiteral("surface"), kSurface},
        {QStringLiteral("border"), kBorder},
        {QStringLiteral("text"), kText},
        {QStringLiteral("mutedText"), kMutedText},
        {QStringLiteral("faintText"), kFaintText},
        {QStringLiteral("textOnColor"), kTextOnColor},
        {QStringLiteral("accent"), kAccent},
        {QStringLiteral("accentSoft"), kAccentSoft},
        {QStringLiteral("accentHover"), kAccentHover},
        {QStringLiteral("accentBorder"), kAccentBorder},
        {QStringLiteral("buttonBorder"), kButtonBorder},
        {QStringLiteral("divider"), kDivider},
        {QStringLiteral("logBackground"), kLogBackground},
        {QStringLiteral("ok"), kOk},
        {QStringLiteral("error"), kError},
        {QStringLiteral("errorSoft"), kErrorSoft},
        {QStringLiteral("warning"), kWarning},
        {QStringLiteral("warningSoft"), kWarningSoft},
        {QStringLiteral("warningText"), kWarningText},
        {QStringLiteral("warningBorder"), kWarningBorder},
        {QStringLiteral("errorBorder"), kErrorBorder},
        {QStringLiteral("noteText"), kNoteText},
        {QStringLiteral("noteBorder"), kNoteBorder},
        {QStringLiteral("panelBorder"), kPanelBorder},
        {QStringLiteral("canvas"), kCanvas},
        {QStringLiteral("gridLine"), kGridLine},
        {QStringLiteral("edge"), kEdge},
    };
    return table;
}

// "#rrggbb", or "rgba(r, g, b, a)" for a translucent colour.
QString cssColor(const QColor& color) {
    if (color.alpha() == 255) return color.name();
    return QStringLiteral("rgba(%1, %2, %3, %4)")
        .arg(color.red())
        .arg(color.green())
        .arg(color.blue())
        .arg(color.alpha());
}

} // namespace

void applyStudioTheme(QApplication& app) {
    if (QStyle* fusion = QStyleFactory::create(QStringLiteral("Fusion"))) app.setStyle(fusion);
    app.setPalette(studioPalette());

    QFont font = QApplication::font();
    font.setPointSizeF(10.0);
    app.setFont(font);

    app.setStyleSheet(studioStyleSheet());
    app.setWindowIcon(studioIcon());
}

QString studioStyleSheet() {
    static const QRegularExpression placeholder(QStringLiteral("@([A-Za-z]+)"));
    const QString sheet = QString::fromLatin1(kStyleSheetTemplate);
    const std::map<QString, QColor>& table = sheetColors();
    QString result;
    result.reserve(sheet.size());
    qsizetype copied = 0;
    for (auto it = placeholder.globalMatch(sheet); it.hasNext();) {
        const QRegularExpressionMatch match = it.next();
        result += QStringView(sheet).mid(copied, match.capturedStart() - copied);
        const auto colour = table.find(match.captured(1));
        if (colour != table.end()) {
            result += cssColor(colour->second);
        } else {
            qWarning("studioStyleSheet: no colour named %s", qPrintable(match.captured(0)));
            result += match.captured(0); // left in: test_theme reports it
        }
        copied = match.capturedEnd();
    }
    result += QStringView(sheet).mid(copied);
    return result;
}

void setStyleProperty(QWidget* widget, const char* name, const QVariant& value) {
    if (widget->property(name) == value) return;
    widget->setProperty(name, value);
    widget->style()->unpolish(widget);
    widget->style()->polish(widget);
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

namespace {

// QCustomPlot replots on every resize, and at an empty size it paints into an empty pixmap
// ("QPainter::begin: Paint device returned engine == 0", "paint buffer returned inactive
// painter"), for that resize and every replot after it. A splitter or a dock squeezed to nothing
// does that to a plot. Swallowing the empty resize keeps the last buffers until it has room again.
class EmptyResizeFilter : public QObject {
  public:
    using QObject::QObject;
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (event->type() == QEvent::Resize && static_cast<QResizeEvent*>(event)->size().isEmpty())
            return true;
        return QObject::eventFilter(watched, event);
    }
};

} // namespace

void stylePlot(QCustomPlot* plot, std::initializer_list<QCPAxis*> axes, const QColor& axisColor) {
    if (!plot->property("emptyResizeFilter").toBool()) { // once, though styled again
        plot->installEventFilter(new EmptyResizeFilter(plot));
        plot->setProperty("emptyResizeFilter", true);
    }
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

QColor runColor(int index) {
    constexpr int count = int(std::size(colors::kRunColors));
    return colors::kRunColors[((index % count) + count) % count];
}

QIcon studioIcon() {
    static const bool registered = [] {
        initStudioResources();
        return true;
    }();
    (void)registered;
    return QIcon(QStringLiteral(":/icons/myelin.png"));
}

void setLogTicks(QCPAxis* axis) {
    const QCPRange range = axis->range();
    if (!(range.lower > 0) || !(range.upper > range.lower)) return;
    const bool wide = range.upper / range.lower > 1000;
    auto ticker = QSharedPointer<QCPAxisTickerText>::create();
    for (int decade = int(std::floor(std::log10(range.lower)));
         decade <= int(std::ceil(std::log10(range.upper))); ++decade)
        for (double mantissa : {1.0, 2.0, 5.0}) {
            if (wide && mantissa != 1.0) continue;
            const double tick = mantissa * std::pow(10.0, decade);
            if (tick >= range.lower && tick <= range.upper)
                ticker->addTick(tick, QString::number(tick, 'g', 3));
        }
    ticker->setSubTickCount(0);
    axis->setTicker(ticker);
}

void setLiveText(QLabel* label, const QString& text) {
    if (label->text() == text) return;
    label->setText(text);
    const QSize hint = label->sizeHint();
    // Fixed (minimum == maximum) in both directions: then setText's size-hint change does not
    // reach the parent's layout (QWidget::updateGeometry).
    if (hint.width() > label->minimumWidth() || hint.height() != label->minimumHeight() ||
        label->minimumSize() != label->maximumSize())
        label->setFixedSize(std::max(hint.width(), label->minimumWidth()), hint.height());
}

} // namespace myelin::ui
