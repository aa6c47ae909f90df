#pragma once
// The studio's look: Fusion style, a calm light palette, one style sheet, and the app icon.
#include <QColor>
#include <QIcon>
#include <QString>
#include <QVariant>

#include <initializer_list>

class QLabel;

class QApplication;
class QCPAxis;
class QCustomPlot;
class QWidget;

namespace myelin::graph {
enum class Category;
}

namespace myelin::ui {

// The studio's colour table: every colour a widget paints or styles with is one of these, named
// by its role. The application style sheet (studioStyleSheet) is generated from this table;
// files outside ui/widgets/theme* hold no colour literals (tests/ui/test_theme.cpp).
namespace colors {
inline const QColor kWindow{0xF4, 0xF5, 0xF7};
inline const QColor kSurface{0xFF, 0xFF, 0xFF};
inline const QColor kBorder{0xDD, 0xE1, 0xE6};
inline const QColor kText{0x1F, 0x29, 0x33};
inline const QColor kMutedText{0x52, 0x60, 0x6D};
inline const QColor kAccent{0x2F, 0x62, 0x96};
inline const QColor kAccentSoft{0xE6, 0xEE, 0xF6};
inline const QColor kOk{0x2E, 0x8B, 0x57};
inline const QColor kError{0xC6, 0x28, 0x28};
inline const QColor kErrorSoft{0xFD, 0xEC, 0xEA};
inline const QColor kWarning{0xB7, 0x79, 0x1F};
inline const QColor kWarningSoft{0xFD, 0xF6, 0xE3};
inline const QColor kCanvas{0xF7, 0xF8, 0xFA};
inline const QColor kGridLine{0xEC, 0xEF, 0xF2};
inline const QColor kEdge{0x8A, 0x97, 0xA6};

// Text
inline const QColor kFaintText{0x7B, 0x87, 0x94};   // hints, placeholders, time stamps, headings
inline const QColor kTextOnColor{0xFF, 0xFF, 0xFF}; // on a saturated fill (accent, status)
// Controls and frames
inline const QColor kAccentHover{0x28, 0x54, 0x7F};   // an accent-filled button under the mouse
inline const QColor kBarBehind{0xC9, 0xD8, 0xE8};     // a light bar with a darker one in front
inline const QColor kAccentBorder{0xC9, 0xD8, 0xE8};  // the frame of a kAccentSoft notice
inline const QColor kButtonBorder{0xC9, 0xD1, 0xDA};  // the frame of a flat push button
inline const QColor kDivider{0xEE, 0xF0, 0xF3};       // between the entries of a list
inline const QColor kLogBackground{0xFB, 0xFB, 0xFC}; // read-only log text
inline const QColor kWarningText{0x7A, 0x53, 0x12};   // text on kWarningSoft
inline const QColor kWarningBorder{0xEB, 0xD9, 0xA8}; // the frame of a kWarningSoft banner
inline const QColor kErrorBorder{0xF5, 0xC2, 0xBE};   // the frame of a kErrorSoft box
inline const QColor kNoteText{0x3E, 0x4C, 0x59};      // text of a note standing in for a plot
inline const QColor kNoteBorder{0xC4, 0xCB, 0xD3};    // its dashed frame
inline const QColor kPanelBorder{0xE4, 0xE7, 0xEB};   // the frame of a summary panel
// Canvas
inline const QColor kNodeShadow{0x1F, 0x29, 0x33, 18};           // under a node's card
inline const QColor kCalloutShadow{0x00, 0x00, 0x00, 28};        // under the feedback bubble
inline const QColor kEdgeLabelBackground{0xFF, 0xFF, 0xFF, 235}; // an edge's shape label
// Plots
inline const QColor kLegendBackground{0xFF, 0xFF, 0xFF, 220}; // over the curves
inline const QColor kTrainCurve = kAccent; // training metrics per epoch, the learning rate
inline const QColor kTrainStepCurve{0x9E, 0xC1, 0xE3}; // training loss per step
inline const QColor kValidationCurve{0xE0, 0x7A, 0x1F};
inline const QColor kHeatmapLow{0xBF, 0xD4, 0xEA};  // share heat map: a small share of values
inline const QColor kZerosMapLow{0xE8, 0xF5, 0xEC}; // share of zeros: none (healthy)
inline const QColor kZerosMapMid{0xF3, 0xD9, 0x9A}; // share of zeros: many (before kWarning)
// Run status (runs browser): its dot and text
inline const QColor kRunRunning = kAccent;
inline const QColor kRunFinished = kOk;
inline const QColor kRunStopped = kMutedText; // stopped on purpose: neither good nor bad
inline const QColor kRunFailed = kError;
inline const QColor kRunInterrupted = kWarning; // its process ended without finishing it
// Runs compared on one plot: one colour each, in this order (a calm take on Tableau 10).
inline const QColor kRunColors[] = {{0x2F, 0x62, 0x96}, {0xE0, 0x7A, 0x1F}, {0x2E, 0x8B, 0x57},
                                    {0xC6, 0x28, 0x28}, {0x7B, 0x4F, 0xA6}, {0x8C, 0x56, 0x4B},
                                    {0xCF, 0x5C, 0xA6}, {0x5F, 0x6B, 0x77}, {0x9A, 0x9A, 0x1F},
                                    {0x17, 0x9C, 0xB0}};
inline const QColor kDiffCell = kWarningSoft; // a table cell whose value differs between runs
} // namespace colors

// The colour that marks a layer category on the canvas and in the palette.
QColor categoryColor(graph::Category category);

// The colour of the index-th compared run (the table repeats after its last colour).
QColor runColor(int index);

// Applies style, palette, font and style sheet to the whole application. Call once, after
// the QApplication exists and before the first window is shown.
void applyStudioTheme(QApplication& app);

// The studio's one style sheet (applyStudioTheme sets it on the application): every widget's
// rules, selected by object name, class or the "class" property, with the colours of the table
// above substituted. Widgets do not set sheets of their own.
QString studioStyleSheet();

// Sets the dynamic property `name` that studioStyleSheet selects on (#trainingState[state=
// "running"], QLineEdit[invalid="true"]) and re-polishes `widget` so the matching rules apply
// now: for a look that changes at run time.
void setStyleProperty(QWidget* widget, const char* name, const QVariant& value);

// Sets the text of a label that changes many times a second while a run goes (progress, speed,
// ETA) without laying its window out again each time: the label keeps a fixed size that only
// grows, so a text of another width repaints the label alone. Clearing keeps the size.
void setLiveText(QLabel* label, const QString& text);

// The studio's look for a plot: the surface background and, on `axes`, lines in `axisColor`
// (axis, ticks, sub-ticks), muted label text and light grid lines.
void stylePlot(QCustomPlot* plot, std::initializer_list<QCPAxis*> axes,
               const QColor& axisColor = colors::kBorder);

// Labels on a log axis at 1, 2 and 5 x 10^k over a span of up to three decades, at 10^k over a
// wider one (QCPAxisTickerLog labels only the decades, which leaves a narrow range bare). Call
// after the axis's range is set.
void setLogTicks(QCPAxis* axis);

// The application icon (a neuron with a myelinated axon), from the compiled-in resources.
QIcon studioIcon();

} // namespace myelin::ui
