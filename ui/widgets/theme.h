#pragma once
// The studio's look: Fusion style, a calm light palette, one style sheet, and the app icon.
#include <QColor>
#include <QIcon>

#include <initializer_list>

class QApplication;
class QCPAxis;
class QCustomPlot;

namespace myelin::graph {
enum class Category;
}

namespace myelin::ui {

// Colours shared by widgets that paint or style themselves.
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
} // namespace colors

// The colour that marks a layer category on the canvas and in the palette.
QColor categoryColor(graph::Category category);

// Applies style, palette, font and style sheet to the whole application. Call once, after
// the QApplication exists and before the first window is shown.
void applyStudioTheme(QApplication& app);

// The studio's look for a plot: the surface background and, on `axes`, lines in `axisColor`
// (axis, ticks, sub-ticks), muted label text and light grid lines.
void stylePlot(QCustomPlot* plot, std::initializer_list<QCPAxis*> axes,
               const QColor& axisColor = colors::kBorder);

// The application icon (a neuron with a myelinated axon), from the compiled-in resources.
QIcon studioIcon();

} // namespace myelin::ui
