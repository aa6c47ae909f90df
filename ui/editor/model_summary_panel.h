#pragma once
// The Model Summary: a torchinfo-like table of every layer in execution order (module name,
// kind, output shape, parameters, FLOPs, activation memory) for a chosen batch size, with totals,
// and the memory training needs at that batch size against what the project's device has free
// (train/memory_estimate.h).
#include <myelin/graph/analysis.h>

#include <QWidget>

class QLabel;
class QSpinBox;
class QTableWidget;

namespace myelin::ui {

class ProjectDocument;

class ModelSummaryPanel : public QWidget {
    Q_OBJECT

  public:
    explicit ModelSummaryPanel(ProjectDocument* document, QWidget* parent = nullptr);

    QSpinBox* batchSizeBox() const { return batchSize_; }
    QTableWidget* table() const { return table_; }
    // "Training at batch 128 on cpu needs about 205 MB of 18.2 GB free · ...".
    QLabel* memoryLabel() const { return memory_; }
    // The analysis behind the table (at the chosen batch size).
    const graph::Analysis& analysis() const { return analysis_; }

  signals:
    void nodeActivated(graph::NodeId id);

  private:
    void refresh();
    void refreshMemory();

    ProjectDocument* document_;
    QSpinBox* batchSize_ = nullptr;
    QLabel* totals_ = nullptr;
    QLabel* memory_ = nullptr;
    QTableWidget* table_ = nullptr;
    graph::Analysis analysis_;
};

} // namespace myelin::ui
