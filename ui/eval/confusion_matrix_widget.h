#pragma once
// The confusion matrix as a painted grid: true classes down the left, predicted classes along
// the bottom (names rotated when they do not fit), each cell shaded by its share of its row
// and labelled with its count or, row-normalised, its share. Clicking a cell selects it
// (cellClicked); the selected cell is outlined.
#include <myelin/train/metrics.h>

#include <QRect>
#include <QWidget>

#include <optional>
#include <utility>

namespace myelin::ui {

class ConfusionMatrixWidget : public QWidget {
    Q_OBJECT

  public:
    explicit ConfusionMatrixWidget(QWidget* parent = nullptr);

    void setMatrix(const train::ConfusionMatrix& matrix);
    const train::ConfusionMatrix& matrix() const { return matrix_; }
    // Row-normalised: each cell shows its share of the true class's examples.
    void setNormalized(bool normalized);
    bool isNormalized() const { return normalized_; }
    void selectCell(int trueClass, int predictedClass); // -1, -1: none
    std::optional<std::pair<int, int>> selectedCell() const;
    // The text a cell shows ("12", or "0.34" row-normalised) and where it is drawn.
    QString cellText(int trueClass, int predictedClass) const;
    QRect cellRect(int trueClass, int predictedClass) const;
    // The width at which the grid fills `height` (wider leaves space beside it).
    int widthForHeight(int height) const;
    QSize sizeHint() const override { return {560, 520}; }
    QSize minimumSizeHint() const override { return {260, 240}; }

  signals:
    void cellClicked(int trueClass, int predictedClass);

  protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

  private:
    struct Layout {
        QRect grid;           // the cells
        int cell = 0;         // side of one cell
        bool rotated = false; // predicted names drawn upwards
    };
    void relayout();
    double share(int trueClass, int predictedClass) const; // of the row
    QString className(int c) const;

    train::ConfusionMatrix matrix_;
    bool normalized_ = false;
    int selectedTrue_ = -1;
    int selectedPredicted_ = -1;
    Layout layout_;
};

} // namespace myelin::ui
